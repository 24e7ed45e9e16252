/// The request body of a route taken whole as one parameter's value: an uploaded photo or
/// document, sent as the body of a `PUT` or `POST` with its own `Content-Type`
/// (`curl -T cat.jpg`, `URLSession.upload`), not inside a form or JSON.
///
/// The other parameters come from the path and the query string. The value is content
/// (``RawArguments/appendContent(_:for:)``): its bytes as they are for a `bytes` parameter, its
/// text for a `string` one. An empty body leaves the parameter absent.
public struct RouteBody: Sendable, Hashable {
    /// The parameter that receives the body.
    public var parameter: String
    /// The media type the body must have: a `type/subtype` (parameters ignored) or `type/*`;
    /// nil accepts any.
    public var mediaType: String?

    public init(parameter: String, mediaType: String? = nil) {
        self.parameter = parameter
        self.mediaType = mediaType
    }

    /// The body as the parameter's argument.
    /// - Throws: ``ArgumentError/Reason/unsupportedBodyType(sent:accepted:)`` (415) when a
    ///   body is sent without the accepted media type.
    func arguments(_ body: [UInt8], contentType: String?) throws(ArgumentError) -> RawArguments {
        var arguments = RawArguments()
        guard !body.isEmpty else { return arguments }
        if let accepted = self.mediaType, !self.accepts(contentType) {
            let sent = contentType.map(MediaType.essence(of:)).flatMap { $0.isEmpty ? nil : $0 }
            throw ArgumentError(.unsupportedBodyType(sent: sent, accepted: accepted), parameter: self.parameter)
        }
        arguments.appendContent(body, for: self.parameter)
        return arguments
    }

    /// Whether a body with `contentType` is of the accepted media type.
    func accepts(_ contentType: String?) -> Bool {
        guard let accepted = self.mediaType.map(MediaType.essence(of:)) else { return true }
        guard let sent = contentType.map(MediaType.essence(of:)), !sent.isEmpty else { return false }
        if accepted.hasSuffix("/*") { return sent.hasPrefix(accepted.dropLast()) }
        return sent == accepted
    }
}
