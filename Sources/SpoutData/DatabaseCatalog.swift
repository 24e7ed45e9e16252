import SpoutCore

/// The few catalog questions the loaders ask, in each dialect.
enum DatabaseCatalog {
    /// Which of `names` already exist as tables or views in the connection's current schema
    /// (PostgreSQL) or main database (SQLite), in the order of `names`.
    static func existingTables(_ names: [String], on connection: any DatabaseConnection) throws -> [String] {
        let sql: String
        switch connection.dialect {
        case .postgres:
            sql = "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()"
        case .sqlite:
            sql = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
        }
        var existing = Set<String>()
        let cursor = try connection.query(try ParsedSQL(sql, dialect: connection.dialect), [], options: QueryOptions())
        defer { cursor.close() }
        while try cursor.next() {
            if case .text(let name) = cursor.value(at: 0) {
                existing.insert(name.lowercased())
            }
        }
        return names.filter { existing.contains($0.lowercased()) }
    }

    /// `SELECT count(*) FROM table`.
    static func rowCount(of table: String, on connection: any DatabaseConnection) throws -> Int {
        let sql = try ParsedSQL("SELECT count(*) FROM \(table)", dialect: connection.dialect)
        let cursor = try connection.query(sql, [], options: QueryOptions())
        defer { cursor.close() }
        guard try cursor.next() else { return 0 }
        switch cursor.value(at: 0) {
        case .integer(let count): return Int(count)
        case .decimal(let text): return Int(text) ?? -1
        default: return -1
        }
    }
}

/// A foreign key constraint of a PostgreSQL table, as `pg_get_constraintdef` prints it.
struct ForeignKeyConstraint: Sendable, Hashable {
    var table: String
    var name: String
    /// `FOREIGN KEY (emp_no) REFERENCES employees(emp_no) ON DELETE CASCADE`.
    var definition: String

    var quotedName: String { "\"" + self.name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
}

extension DatabaseCatalog {
    /// The foreign keys declared on `tables` in the current schema (PostgreSQL only; SQLite
    /// cannot add constraints to an existing table, so it returns none).
    static func foreignKeys(of tables: [String], on connection: any DatabaseConnection) throws -> [ForeignKeyConstraint] {
        guard connection.dialect == .postgres else { return [] }
        let sql = """
            SELECT t.relname::text, c.conname::text, pg_get_constraintdef(c.oid)
            FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
            WHERE c.contype = 'f' AND t.relnamespace = current_schema()::regnamespace
            ORDER BY 1, 2
            """
        let wanted = Set(tables)
        var constraints: [ForeignKeyConstraint] = []
        let cursor = try connection.query(try ParsedSQL(sql, dialect: connection.dialect), [], options: QueryOptions())
        defer { cursor.close() }
        while try cursor.next() {
            guard case .text(let table) = cursor.value(at: 0), case .text(let name) = cursor.value(at: 1),
                case .text(let definition) = cursor.value(at: 2), wanted.contains(table)
            else { continue }
            constraints.append(ForeignKeyConstraint(table: table, name: name, definition: definition))
        }
        return constraints
    }
}
