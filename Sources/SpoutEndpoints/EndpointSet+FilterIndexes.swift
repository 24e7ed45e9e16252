import SpoutCore
import SpoutHTTP

extension EndpointSet {
    /// The optional filters (``SpoutCore/OptionalClauses``) of GET endpoints that no index of
    /// `database` can serve, one message each, for `spout serve` to log at startup: a request
    /// with such a filter reads every row the rest of the statement reads.
    ///
    /// A filter is served when a column its predicate names is the first column of an index
    /// (of any table the database's catalog lists: PostgreSQL's `pg_index` outside the system
    /// schemas, SQLite's `pragma_index_list` plus `INTEGER PRIMARY KEY` columns). Names are
    /// compared without case; an index on an expression serves nothing here, so a filter on
    /// `lower(name)` is reported even with an index on `lower(name)`. Returns nothing when the
    /// catalog cannot be read.
    public func unindexedFilters(on database: Database) -> [String] {
        guard let indexed = try? database.withConnection(readOnly: true, { try Self.leadingIndexColumns(on: $0) }) else { return [] }
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

    /// The first column of every index the database's catalog lists, upper-cased.
    private static func leadingIndexColumns(on connection: any DatabaseConnection) throws -> Set<String> {
        let catalog: [String]
        switch connection.dialect {
        case .postgres:
            catalog = [
                """
                SELECT a.attname::text FROM pg_index i
                JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                WHERE n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
                """
            ]
        case .sqlite:
            catalog = [
                """
                SELECT ii.name FROM sqlite_schema m, pragma_index_list(m.name) il, pragma_index_info(il.name) ii
                WHERE m.type = 'table' AND ii.seqno = 0
                """,
                """
                SELECT p.name FROM sqlite_schema m, pragma_table_info(m.name) p
                WHERE m.type = 'table' AND p.pk = 1 AND upper(p.type) = 'INTEGER'
                """,
            ]
        }
        let results = try connection.queryAll(try catalog.map { BoundStatement(try ParsedSQL($0, dialect: connection.dialect), []) })
        var columns = Set<String>()
        for result in results {
            for row in result.rows {
                if case .text(let name)? = row.first { columns.insert(name.uppercased()) }
            }
        }
        return columns
    }
}
