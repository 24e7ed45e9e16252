import SpoutCore

extension EndpointSet {
    /// The tables the syncable endpoints follow, each once per set of key columns.
    public var trackedTables: [TrackedTable] {
        var seen: Set<TrackedTable> = []
        var tables: [TrackedTable] = []
        for endpoint in self.endpoints {
            for table in endpoint.sync?.tables ?? [] where seen.insert(table).inserted { tables.append(table) }
        }
        return tables
    }

    /// Gets `database` ready for the syncable endpoints' reads, at start: every table they
    /// name must exist with the columns named (else a ``ConfigurationError`` at the table's
    /// line of its endpoint file: the start stops), and the change log and each table's
    /// triggers are created where missing (``SpoutCore/ChangeTracking/installChangeTracking(_:)``;
    /// a role that may not throws ``ChangeTrackingNotSetUp``, and sync reads wait). Marks
    /// ``syncState`` ready when it succeeds. Does nothing without syncable endpoints.
    public func prepareSync(on database: Database) async throws {
        let tables = self.trackedTables
        guard !tables.isEmpty else { return }
        let found: [String: [String]?] = try await database.withSession(DatabaseWork(readOnly: false)) { session in
            try await session.run { connection in
                guard let log = connection as? any ChangeTracking else {
                    throw DatabaseError(.unsupported, message: "this database keeps no change log")
                }
                var found: [String: [String]?] = [:]
                for name in Set(tables.map(\.name)) { found[name] = try log.columns(ofTable: name) }
                return found
            }
        }
        for endpoint in self.endpoints {
            guard let sync = endpoint.sync else { continue }
            for table in sync.tables {
                let place = sync.positions[table.name] ?? EndpointSync.Position(file: endpoint.file, line: endpoint.line, column: nil)
                guard let columns = found[table.name] ?? nil else {
                    throw place.error("sync table '\(table.name)' of \(endpoint.title) is not a table of the database")
                }
                for column in table.keyColumns where TrackedTable.spelling(of: column, among: columns) == nil {
                    throw place.error(
                        "sync table '\(table.name)' of \(endpoint.title) has no column '\(column)' (its columns: \(columns.joined(separator: ", ")))")
                }
            }
        }
        do {
            _ = try await database.withSession(DatabaseWork(readOnly: false)) { session in
                try await session.run { connection in
                    try (connection as? any ChangeTracking)?.installChangeTracking(tables) ?? false
                }
            }
        } catch let error as DatabaseError {
            throw ChangeTrackingNotSetUp(reason: error.message)
        }
        self.syncState.markReady()
    }

    /// Deletes the changes older than `retention` from `database`'s change log; returns how
    /// many. Cursors from before them are answered 410 from then on.
    public func pruneChanges(on database: Database, retention: Duration) async throws -> Int {
        guard !self.trackedTables.isEmpty else { return 0 }
        let seconds = Int(retention.components.seconds)
        return try await database.withSession(DatabaseWork(readOnly: false)) { session in
            try await session.run { connection in try (connection as? any ChangeTracking)?.pruneChanges(olderThan: seconds) ?? 0 }
        }
    }
}

/// The change log or a table's triggers could not be created: the role lacks the rights (the
/// tables' owner creates triggers). Sync reads answer 503 until it is done; everything else
/// is served.
public struct ChangeTrackingNotSetUp: Error, CustomStringConvertible {
    /// The database's words.
    public var reason: String

    public var description: String {
        "change tracking for the syncable endpoints is not set up (\(self.reason)); sync reads answer 503 until it is: "
            + "start Spout once with the tables' owner, or give its role the TRIGGER privilege on them (docs/endpoints.md, Sync reads)"
    }
}
