import HTTPTypes

/// The methods of ``SpoutClient/send(_:path:query:body:)`` are swift-http-types'
/// `HTTPRequest.Method` (`.post`, `.put`, `.patch`, `.delete`).
@available(*, deprecated, renamed: "HTTPRequest.Method")
public typealias SpoutMethod = HTTPRequest.Method
