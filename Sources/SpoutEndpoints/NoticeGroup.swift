import SpoutCore

/// What decides whether a change concerns a group of subscribers: the endpoint's statement for
/// their arguments, its sync key, the tables it follows, and who it runs as.
struct NoticeProbe: Sendable {
    /// The endpoint's statement for the group's arguments (optional filters applied), with
    /// named parameters.
    var sql: String
    var arguments: [String: SQLValue]
    /// The result columns of the sync key (``EndpointSync/key``).
    var key: [String]
    /// The ``SpoutCore/TrackedTable/logName`` of each table the endpoint follows.
    var tables: [String]
    /// The role and claims its statements run with; nil: the pool's.
    var session: RequestSession?
    var statementTimeout: Duration?

    /// The statements that tell which of `keys` the result holds now, in batches of at most
    /// `size` keys.
    func statements(for keys: [[SQLValue]], size: Int, dialect: SQLDialect) throws -> [BoundStatement] {
        try SyncQuery.batches(of: keys, size: size).map { batch in
            let sql = try ParsedSQL.cached(SyncQuery.keys(of: self.sql, key: self.key, count: batch.count, dialect: dialect), dialect: dialect)
            return BoundStatement(sql, try sql.bind(SyncQuery.arguments(self.arguments, keys: batch)))
        }
    }

    /// The statement that reads the keys of up to `limit` rows of the result.
    func allKeys(limit: Int, dialect: SQLDialect) throws -> BoundStatement {
        let sql = try ParsedSQL.cached(SyncQuery.keys(of: self.sql, key: self.key, limit: limit), dialect: dialect)
        return BoundStatement(sql, try sql.bind(self.arguments))
    }
}

/// The subscribers of one endpoint with the same arguments and identity: they share one
/// evaluation per change batch and one cursor. Confined to its ``LiveNotices``.
///
/// ``held`` is a superset of the keys in the group's result (it may keep keys that left):
/// a change to a held key concerns the group without a query; a change to another key
/// concerns it only when the key is in its result now, which one query tells.
final class NoticeGroup {
    /// What makes subscribers one group: the endpoint, the sync cursor's context (its
    /// arguments, the claims its statements use, the role and subject) and the whole session.
    struct Key: Hashable, Sendable {
        var endpoint: String
        var context: [UInt8]
        var session: RequestSession?
    }

    let key: Key
    let probe: NoticeProbe
    /// Seals a position as a sync cursor of this endpoint, arguments and caller.
    let seal: @Sendable (Int64) -> String
    /// Nil while unknown (loading, or the result has more keys than a group remembers): then
    /// every change to its tables concerns it.
    var held: Set<[SQLValue]>?
    /// The key columns' types as the result has them, to type the log's keys (``SpoutCore/SyncQuery/typed(_:as:)``).
    var keyColumns: [Column] = []
    var isLoading = true
    /// Keys changed while the group was loading, untyped: added to ``held`` once it is known.
    var changedWhileLoading: Set<[SQLValue]> = []
    var subscribers: [Int: NoticeSubscriber] = [:]

    init(key: Key, probe: NoticeProbe, seal: @escaping @Sendable (Int64) -> String) {
        self.key = key
        self.probe = probe
        self.seal = seal
    }

    /// Tells every subscriber that the result may have changed between `from` and `to`.
    func notify(from: Int64, to: Int64) {
        let from = self.seal(from)
        let to = self.seal(to)
        for subscriber in self.subscribers.values { subscriber.notify(from: from, to: to) }
    }

    /// `keys` (as the log holds them) typed like the result's key.
    func typed(_ keys: Set<[SQLValue]>) -> Set<[SQLValue]> {
        Set(keys.map { SyncQuery.typed($0, as: self.keyColumns) })
    }
}
