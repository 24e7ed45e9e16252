import HTTPTypes

/// One page being read: its exchange and splitter. A class so that the iterator (a struct,
/// copied freely) shares one; when the last reference goes before the body ended, the cache
/// copy is dropped and the connection closed.
final class Page {
    let exchange: Exchange
    var splitter: JSONRowSplitter
    private var completed = false

    init(_ exchange: Exchange) {
        self.exchange = exchange
        let contentType = exchange.headers[.contentType]?.lowercased() ?? ""
        let isLines = contentType.contains("ndjson") || contentType.contains("jsonl") || contentType.contains("json-seq")
        self.splitter = JSONRowSplitter(format: isLines ? .lines : .array)
    }

    /// The body ended and every row was split: store the cache copy.
    func complete() {
        self.completed = true
        self.exchange.cacheWriter?.commit()
    }

    deinit {
        if !self.completed {
            self.exchange.cacheWriter?.abandon()
            self.exchange.body.close()
        }
    }
}
