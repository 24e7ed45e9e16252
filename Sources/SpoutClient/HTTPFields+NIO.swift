#if os(Linux)
import HTTPTypes
import NIOHTTP1

extension HTTPFields {
    /// NIO's header fields as swift-http-types' (a name HTTP does not allow is dropped: NIO's
    /// parser does not produce one).
    init(_ headers: HTTPHeaders) {
        self.init(headers.compactMap { name, value in HTTPField.Name(name).map { HTTPField(name: $0, value: value) } })
    }
}
#endif
