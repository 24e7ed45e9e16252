import SpoutCore
import SpoutHTTP

/// Names the argument behind a ``SpoutCore/DatabaseError/Code/unrepresentableText`` error: a
/// character the database's encoding cannot hold (a `€` sent to a `LATIN1` database).
/// PostgreSQL does not say which value it was; only text that is not ASCII can be it (every
/// server encoding holds ASCII), so when exactly one text argument has such characters the
/// answer is the argument error naming it:
/// `400 {"error":"text not representable in the database's encoding","parameter":"name","value":"5 €"}`.
/// Otherwise the error is answered as it is (400, unnamed).
enum UnrepresentableText {
    /// `error` as an ``SpoutHTTP/ArgumentError`` naming the one argument it can be, else `error`.
    static func naming(_ error: any Error, arguments: [String: SQLValue]) -> any Error {
        guard let databaseError = error as? DatabaseError, databaseError.code == .unrepresentableText else { return error }
        let candidates = arguments.filter { _, value in
            guard case .text(let text) = value else { return false }
            return text.utf8.contains { $0 >= 0x80 }
        }
        guard candidates.count == 1, let (name, value) = candidates.first, case .text(let text) = value else { return error }
        return ArgumentError(.rejected(databaseError.code.name), parameter: name, value: text)
    }
}
