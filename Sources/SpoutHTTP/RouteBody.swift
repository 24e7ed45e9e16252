/// The request body of a route taken whole as one parameter's value: an uploaded photo or
/// document, sent as the body of a `PUT` or `POST` with its own `Content-Type`
/// (`curl -T cat.jpg`, `URLSession.upload`), not inside a form or JSON.
///
/// The other parameters come from the path and the query string. The value is content
/// (``RawArguments/appendContent(_:for:)``): its bytes as they are for a `bytes` parameter, its
/// text for a `string` one. An empty body leaves the parameter absent. Only the body gives
/// these parameters values: the server drops any the query string names
/// (``arguments(_:contentType:replacingIn:)`` replaces them).
public struct RouteBody: Sendable, Hashable {
    /// The parameter that receives the body.
    public var parameter: String
    /// The media type the body must have: a `type/subtype` (parameters ignored) or `type/*`;
    /// nil accepts any.
    public var mediaType: String?
    /// The parameter that receives the body's media type, its essence (`image/heic`), so that
    /// it can be stored beside the file; nil for none.
    public var mediaTypeParameter: String?

    public init(parameter: String, mediaType: String? = nil, mediaTypeParameter: String? = nil) {
        self.parameter = parameter
        self.mediaType = mediaType
        self.mediaTypeParameter = mediaTypeParameter
    }

    /// `raw` (the path's and the query's arguments) with the body's parameters from the body
    /// alone: whatever the query string said for them is dropped first.
    func arguments(_ body: [UInt8], contentType: String?, replacingIn raw: RawArguments) throws(ArgumentError) -> RawArguments {
        var arguments = raw
        arguments.remove(self.parameter)
        if let typeParameter = self.mediaTypeParameter { arguments.remove(typeParameter) }
        arguments.merge(try self.arguments(body, contentType: contentType))
        return arguments
    }

    /// The body as the parameter's argument.
    /// - Throws: ``ArgumentError/Reason/unsupportedBodyType(sent:accepted:)`` (415) when a
    ///   body is sent without the accepted media type.
    func arguments(_ body: [UInt8], contentType: String?) throws(ArgumentError) -> RawArguments {
        var arguments = RawArguments()
        guard !body.isEmpty else { return arguments }
        let sent = MediaType.essence(of: contentType ?? "")
        if let accepted = self.mediaType, !self.accepts(sent) {
            throw ArgumentError(.unsupportedBodyType(sent: sent.isEmpty ? nil : sent, accepted: accepted), parameter: self.parameter)
        }
        arguments.appendContent(body, for: self.parameter)
        if let typeParameter = self.mediaTypeParameter, !sent.isEmpty { arguments.append(sent, for: typeParameter) }
        return arguments
    }

    /// Whether a body with `contentType` is of the accepted media type.
    func accepts(_ contentType: String?) -> Bool {
        guard let accepted = self.mediaType else { return true }
        return MediaType.isWithin(contentType ?? "", range: accepted)
    }
}
