import Foundation

/// An HTTP/1.1 response as read off the wire by ``RawHTTP`` or an ``HTTPTestConnection``.
public struct HTTPTestResponse: Sendable {
    public var status: Int
    /// Header fields in order, names lowercased.
    public var headers: [(name: String, value: String)]
    /// The body, de-chunked when it came chunked.
    public var body: [UInt8]
    /// The trailer fields of a chunked body, names lowercased.
    public var trailers: [(name: String, value: String)]
    /// The body came chunked.
    public var isChunked: Bool
    /// The body ended as framed: all `Content-Length` bytes, the terminating chunk, or the
    /// server's close for a body framed by closing.
    public var isComplete: Bool

    public init(
        status: Int, headers: [(name: String, value: String)], body: [UInt8] = [],
        trailers: [(name: String, value: String)] = [], isChunked: Bool = false, isComplete: Bool = true
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.trailers = trailers
        self.isChunked = isChunked
        self.isComplete = isComplete
    }

    /// The first field called `name` (any case).
    public func header(_ name: String) -> String? {
        let name = name.lowercased()
        return self.headers.first { $0.name == name }?.value
    }

    /// The first trailer field called `name` (any case).
    public func trailer(_ name: String) -> String? {
        let name = name.lowercased()
        return self.trailers.first { $0.name == name }?.value
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: self.body, as: UTF8.self) }

    /// The body parsed as JSON (Foundation), for structural checks.
    public func json() throws -> Any {
        try JSONSerialization.jsonObject(with: Data(self.body), options: [.fragmentsAllowed])
    }
}
