import HTTPTypes

extension HTTPRequest.Method {
    /// Whether a request of this method sends its arguments in a body (POST, PUT, PATCH): its
    /// body is documented as the operation's request body and read for arguments.
    public var sendsArgumentsInBody: Bool {
        self == .post || self == .put || self == .patch
    }

    /// Whether a request of this method to a route declaring `parameters` reads them from its
    /// body, so that a body of another media type is refused (415) rather than ignored: a write
    /// with parameters. The server's rule (``BodyArguments``) and the OpenAPI document's 415.
    public func readsArguments(fromBodyFor parameters: [Parameter]) -> Bool {
        self.sendsArgumentsInBody && !parameters.isEmpty
    }
}
