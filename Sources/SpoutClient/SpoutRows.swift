import Foundation
import HTTPTypes

/// The rows of a streamed response, decoded one at a time as their bytes arrive; made by
/// ``SpoutClient/rows(_:path:query:allPages:)``.
///
/// Read it once: the body is a network stream, and a second iterator would continue where
/// the first stopped. Stopping early (leaving the loop) closes the connection.
public struct SpoutRows<Row: Decodable>: AsyncSequence {
    public typealias Element = Row

    /// Where the first page's body comes from: the network, a revalidated or a stale copy.
    public var source: ResponseSource { self.first.source }
    /// The first page's response headers.
    public var headers: HTTPFields { self.first.headers }

    /// Whether the endpoint's `rowLimit` cut the result (Spout's `Spout-Truncated: true`: a
    /// header when the result was sent whole, a trailer after a streamed one): the rows read
    /// are the first of more. Read it after the rows; before the last one it may not be known
    /// yet. A paged endpoint reports more rows with `Link` instead (``SpoutClient/rows(_:path:query:allPages:)``).
    public var isCutByRowLimit: Bool {
        (self.first.headers[.spoutTruncated] ?? self.first.body.trailers[.spoutTruncated]) == "true"
    }

    let client: SpoutClient
    let first: Exchange
    let allPages: Bool

    public func makeAsyncIterator() -> Iterator {
        Iterator(client: self.client, exchange: self.first, allPages: self.allPages)
    }

    /// Decodes the rows of the current page, then (with `allPages`) fetches the next.
    public struct Iterator: AsyncIteratorProtocol {
        private let client: SpoutClient
        private let allPages: Bool
        private let decoder: JSONDecoder
        private var page: Page?
        private var rowIndex = 0

        init(client: SpoutClient, exchange: Exchange, allPages: Bool) {
            self.client = client
            self.allPages = allPages
            self.decoder = client.configuration.dateFormat.makeDecoder()
            self.page = Page(exchange)
        }

        /// The next row; nil after the last row of the last page. Throws
        /// ``SpoutClientError/truncatedBody`` for a body cut short,
        /// ``SpoutClientError/malformedBody(_:)`` and ``SpoutClientError/decoding(row:_:)``
        /// for bytes that are not the rows asked for; after a throw, the sequence is over.
        public mutating func next() async throws -> Row? {
            do {
                while let page = self.page {
                    if let bytes = try page.splitter.nextRow() {
                        return try self.decode(bytes)
                    }
                    if let chunk = try await page.exchange.body.nextChunk() {
                        page.exchange.cacheWriter?.append(chunk)
                        page.splitter.feed(chunk)
                        continue
                    }
                    let last = try page.splitter.finish()
                    page.complete()
                    self.page = try await self.nextPage(after: page)
                    if let last { return try self.decode(last) }
                }
                return nil
            } catch {
                self.page = nil
                throw error
            }
        }

        private mutating func decode(_ bytes: ArraySlice<UInt8>) throws -> Row {
            defer { self.rowIndex += 1 }
            do {
                return try self.decoder.decode(Row.self, from: Data(bytes))
            } catch {
                throw SpoutClientError.decoding(row: self.rowIndex, String(describing: error))
            }
        }

        /// The page the finished `page`'s `Link: <…>; rel="next"` points to, when asked to
        /// follow it.
        private func nextPage(after page: Page) async throws -> Page? {
            guard self.allPages, let target = LinkHeader.target(of: "next", in: page.exchange.headers[values: .webLink]) else {
                return nil
            }
            let url = try RequestTarget.resolve(link: target, against: page.exchange.url)
            return Page(try await self.client.get(url, accept: self.client.configuration.rowFormat.accept))
        }
    }
}
