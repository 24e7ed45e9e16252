import HTTPTypes

/// A record of a bulk body refused: it does not parse, or an argument of it does not convert
/// (HTTP 400), naming where it is and, when one is to blame, the parameter:
/// `{"error":"invalid date","index":50000,"parameter":"date","value":"tomorrow"}`.
public struct BulkRecordError: Error, Sendable, Hashable, CustomStringConvertible, HTTPResponseError {
    public let position: BulkPosition
    /// What is wrong: the argument's error, or ``ArgumentError/Reason/malformedBody(_:)`` with
    /// no parameter for a record that does not parse.
    public let argument: ArgumentError

    public init(_ argument: ArgumentError, at position: BulkPosition) {
        self.argument = argument
        self.position = position
    }

    /// A record that does not parse, for `reason`.
    static func malformed(_ reason: String, at position: BulkPosition) -> BulkRecordError {
        BulkRecordError(ArgumentError(.malformedBody(reason), parameter: ""), at: position)
    }

    public var description: String { "\(self.position): \(self.argument)" }

    public var status: HTTPResponse.Status { .badRequest }

    public var responseBody: [UInt8] {
        var object = JSONObjectWriter()
        object.add("error", self.argument.description)
        object.add(self.position.fieldName, self.position.number)
        if !self.argument.parameter.isEmpty { object.add("parameter", self.argument.parameter) }
        if let value = self.argument.value { object.add("value", value) }
        if case .notAllowed(let allowed) = self.argument.reason { object.add("allowed", allowed) }
        return object.finished
    }
}
