import HTTPTypes

extension HTTPResponse.Status {
    /// Whether a response with this status has a body (RFC 9110 §6.4.1: not 1xx, 204 or 304).
    var carriesBody: Bool {
        self != .noContent && self != .notModified && self.kind != .informational
    }
}
