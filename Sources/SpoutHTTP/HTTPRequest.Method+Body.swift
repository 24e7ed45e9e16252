import HTTPTypes

extension HTTPRequest.Method {
    /// Whether a request of this method sends its arguments in a body (POST, PUT, PATCH): its
    /// body is documented as the operation's request body and read for arguments, and one of
    /// another media type is a 415 (``BodyArguments``).
    public var sendsArgumentsInBody: Bool {
        self == .post || self == .put || self == .patch
    }
}
