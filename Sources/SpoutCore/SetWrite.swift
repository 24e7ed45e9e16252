/// Many records of one write statement applied as sets instead of one statement each: what a
/// driver offers a bulk write when its database runs a statement per record much slower than
/// one statement over many (PostgreSQL: the records are copied into a temporary table, then
/// the statement runs over it). ``DatabaseConnection/setWrite(for:)`` makes one, or declines.
///
/// Contract:
/// - Records are numbered from 0 in the order ``append(_:tag:)`` takes them; each holds the
///   statement's parameters in placeholder order and a tag the caller chose (a record's
///   position in the body), given back when the record fails.
/// - ``finish()`` applies every record in the caller's open transaction and answers as the
///   records' statements run one after the other would: the rows they changed, or the first
///   record whose statement fails or changes nothing, with its error. Nothing of a failed
///   record is applied; records before it may be; the caller rolls the transaction back.
/// - An error thrown by ``append(_:tag:)`` is about that record (a value the database cannot
///   take, as a statement of its own would have found) or the connection; one thrown by
///   ``flush()`` or ``finish()`` belongs to no record. After any error, or once ``abandon()``
///   was called, the set write takes nothing more, and the caller's transaction must be
///   rolled back.
/// - Until ``finish()`` returns or ``abandon()`` is called the connection takes no other
///   statement; memory holds a bounded buffer, whatever the number of records.
public protocol SetWrite: AnyObject {
    /// Adds the next record: `parameters` bind the statement's placeholders in order.
    func append(_ parameters: [SQLValue], tag: Int) throws

    /// Hands the database what was appended and is still buffered, so that it works while the
    /// caller waits for its own input (a request body arriving from the network).
    func flush() throws

    /// Applies every record appended.
    func finish() throws -> SetWriteOutcome

    /// Ends the set write without applying anything (the caller's transaction is then failed
    /// and must be rolled back). Idempotent; a no-op after ``finish()``.
    func abandon()
}

/// What a ``SetWrite`` applied.
public enum SetWriteOutcome: Sendable {
    /// Every record ran; their statements changed `changed` rows.
    case applied(records: Int, changed: Int)
    /// The record tagged `tag` failed: `error` is the database's, or nil when its statement
    /// changed no row. `parameters` are its values as the database holds them (as text), for
    /// naming what failed.
    case failed(tag: Int, parameters: [SQLValue], error: (any Error)?)
}
