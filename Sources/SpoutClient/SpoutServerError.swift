/// An error response of Spout: the status and the fields of its JSON body
/// (`{"error":"invalid integer","parameter":"employeeNumber","value":"abc"}`).
///
/// A body that is not Spout's JSON (a proxy's HTML page) leaves `message` as the start of the
/// body's text and the other fields nil.
public struct SpoutServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status (400, 404, 409, 503…).
    public var status: Int
    /// The body's `error`: what went wrong.
    public var message: String
    /// The body's `parameter`: the argument at fault, for a caller's mistake.
    public var parameter: String?
    /// The body's `value`: the rejected value, as text.
    public var value: String?
    /// The body's `allowed`: the accepted values, when the parameter has a set of them.
    public var allowed: [String]?
    /// The `X-Request-Id` response header, to find the request in the server's log.
    public var requestID: String?

    public init(
        status: Int, message: String, parameter: String? = nil, value: String? = nil, allowed: [String]? = nil,
        requestID: String? = nil
    ) {
        self.status = status
        self.message = message
        self.parameter = parameter
        self.value = value
        self.allowed = allowed
        self.requestID = requestID
    }

    public var description: String {
        var text = "HTTP \(self.status): \(self.message)"
        if let parameter = self.parameter { text += " (parameter \(parameter)" + (self.value.map { " = \($0)" } ?? "") + ")" }
        if let allowed = self.allowed { text += "; allowed: \(allowed.joined(separator: ", "))" }
        return text
    }
}
