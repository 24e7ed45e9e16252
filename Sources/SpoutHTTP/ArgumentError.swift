import SpoutCore

/// A request argument that is missing, does not convert, or is not allowed (HTTP 400), or a
/// body whose media type carries no arguments Spout reads (HTTP 415).
///
/// The response body names the parameter and the offending value:
/// `{"error":"invalid integer","parameter":"employeeNumber","value":"abc"}`.
public struct ArgumentError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        /// A required parameter had no argument.
        case missing
        /// The value does not convert to the parameter's (element) type.
        case invalid(ParameterType)
        /// A parameter of one value was given a list (a JSON array).
        case notSingle
        /// The value is not one of the parameter's allowed values.
        case notAllowed(allowed: [String])
        /// The body could not be parsed (the parameter is empty).
        case malformedBody(String)
        /// The body's media type (nil: none was sent) carries no arguments Spout reads, on a
        /// route that takes them (HTTP 415).
        case unsupportedMediaType(String?)
        /// The body of a route whose body is a parameter's value (``RouteBody``) is of another
        /// media type than the one it accepts (nil: none was sent) (HTTP 415).
        case unsupportedBodyType(sent: String?, accepted: String)
        /// A percent-decoded name or value is not UTF-8 (the value is shown as sent).
        case invalidEncoding
        /// The value converts but lies outside what the type or the parameter's limits accept
        /// (the text says what: ``ParameterType/rangeError(for:)``,
        /// ``ParameterLimits/violation(by:)``).
        case outOfRange(String)
        /// Text holds the character U+0000, which PostgreSQL's text types cannot store (and
        /// which SQLite would store and match): refused for every database alike.
        case nulCharacter
        /// The value converts but a rule of the endpoint refuses it (the text says which).
        case rejected(String)
        /// The request names a parameter the endpoint does not have (a misspelled filter);
        /// `accepted` lists the names it takes.
        case unknown(accepted: [String])
    }

    public let reason: Reason
    public let parameter: String
    /// The offending value as the client sent it, when there is one.
    public let value: String?

    public init(_ reason: Reason, parameter: String, value: String? = nil) {
        self.reason = reason
        self.parameter = parameter
        self.value = value
    }

    /// The `error` field of the response body.
    public var description: String {
        switch self.reason {
        case .missing: return "missing required parameter"
        case .invalid(.bytes), .invalid(.list(.bytes)): return "invalid bytes: send Base64, or the file as a multipart part"
        case .invalid(let type): return "invalid \(type.elementType)"
        case .notSingle: return "one value expected, not an array"
        case .notAllowed: return "value not allowed"
        case .malformedBody(let what): return what
        case .unsupportedMediaType(let type?):
            return "unsupported media type \(type): send arguments as \(BodyArguments.mediaTypes)"
        case .unsupportedMediaType(nil):
            return "a body without Content-Type: send arguments as \(BodyArguments.mediaTypes)"
        case .unsupportedBodyType(let sent?, let accepted):
            return "unsupported media type \(sent): send the body as \(accepted)"
        case .unsupportedBodyType(nil, let accepted):
            return "a body without Content-Type: send it as \(accepted)"
        case .invalidEncoding: return "invalid UTF-8"
        case .outOfRange(let range): return range
        case .nulCharacter: return "text must not contain U+0000 (NUL)"
        case .rejected(let why): return why
        case .unknown: return "unknown parameter"
        }
    }

    /// The JSON body sent to the client.
    var body: [UInt8] {
        var object = JSONObjectWriter()
        object.add("error", self.description)
        if !self.parameter.isEmpty { object.add("parameter", self.parameter) }
        if let value = self.value { object.add("value", value) }
        if case .notAllowed(let allowed) = self.reason { object.add("allowed", allowed) }
        if case .unknown(let accepted) = self.reason { object.add("accepted", accepted) }
        return object.finished
    }
}
