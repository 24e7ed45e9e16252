import HTTPTypes
import SpoutHTTP

/// A write's preconditions (RFC 9110 §13.1): `If-Match` and `If-None-Match`, evaluated in the
/// write's transaction against its ``CurrentRepresentation`` before the statement runs.
///
/// Contract:
/// - `If-Match` holds when there is a current row and the field is `*` or lists its tag
///   (strong comparison); a missing row fails it.
/// - `If-None-Match` fails when there is a current row and the field is `*` or lists its tag
///   (weak comparison): `If-None-Match: *` on a create refuses to replace an existing row.
/// - A failed condition is a 412 with the current row and its `ETag` (an error body when
///   there is no row), and nothing is written.
struct WriteConditions: Sendable, Hashable {
    var ifMatch: String?
    var ifNoneMatch: String?

    /// The request's conditions; nil when it sends neither field. Repeated fields are one
    /// list, as RFC 9110 §5.3 combines them.
    init?(_ request: Request) {
        let ifMatch = request.headers[values: .ifMatch]
        let ifNoneMatch = request.headers[values: .ifNoneMatch]
        if ifMatch.isEmpty && ifNoneMatch.isEmpty { return nil }
        self.ifMatch = ifMatch.isEmpty ? nil : ifMatch.joined(separator: ", ")
        self.ifNoneMatch = ifNoneMatch.isEmpty ? nil : ifNoneMatch.joined(separator: ", ")
    }

    /// The field a request sends (for messages): `If-Match` before `If-None-Match`.
    var fieldName: String { self.ifMatch != nil ? "If-Match" : "If-None-Match" }

    /// Whether the write may run, the current representation's tag being `current` (nil: no row).
    func hold(for current: EntityTag?) -> Bool {
        if let ifMatch {
            guard let current, current.isMatched(byIfMatch: ifMatch) else { return false }
        }
        if let ifNoneMatch, let current, current.isMatched(byIfNoneMatch: ifNoneMatch) { return false }
        return true
    }
}

/// A write whose condition failed: the 412 answer, thrown inside the transaction so that it
/// rolls back (an idempotency key claimed in it is released too), and answered after it.
struct PreconditionFailed: Error {
    var response: Response
}
