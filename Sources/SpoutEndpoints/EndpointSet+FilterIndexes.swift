import SpoutCore
import SpoutHTTP

extension EndpointSet {
    /// The optional filters (``SpoutCore/OptionalClauses``) of GET endpoints that no index of
    /// `database` can serve, one message each, for `spout serve` to log at startup: a request
    /// with such a filter reads every row the rest of the statement reads.
    ///
    /// A filter is served when a column its predicate names is the first column of an index
    /// of a table the database's catalog lists (``SpoutCore/SchemaCatalogReading``: the
    /// driver's, with SQLite's `INTEGER PRIMARY KEY` as an index). Names are compared without
    /// case; an index on an expression serves nothing here, so a filter on `lower(name)` is
    /// reported even with an index on `lower(name)`. Returns nothing when the catalog cannot
    /// be read.
    public func unindexedFilters(on database: Database) async -> [String] {
        let tables = try? await database.withSession(DatabaseWork(readOnly: true)) { session in
            try await session.run { connection in try (connection as? any SchemaCatalogReading)?.schemaTables() }
        }
        guard let tables = tables ?? nil else { return [] }
        let indexed = tables.leadingIndexColumns
        var messages: [String] = []
        for endpoint in self.endpoints where endpoint.method == .get {
            guard let clauses = try? OptionalClauses(endpoint.sql.text(for: database.dialect)) else { continue }
            for clause in clauses.clauses where clauses.words(of: clause).isDisjoint(with: indexed) {
                let file = endpoint.sql.overrideFiles[database.dialect] ?? endpoint.sql.file
                messages.append(
                    "\(endpoint.title): no index of the \(database.dialect) database starts with a column of the optional filter "
                        + ":\(clause.parameter) (\(file)); a request with it reads every row the rest of the statement reads")
            }
        }
        return messages
    }
}
