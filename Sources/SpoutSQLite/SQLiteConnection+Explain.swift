import SpoutCore

extension SQLiteConnection {
    /// SQLite's plan of the statement (`EXPLAIN QUERY PLAN`, see
    /// ``SpoutCore/DatabaseConnection/explain(_:_:options:)``): one line per step, indented two
    /// spaces per level, as the `sqlite3` shell prints it. The options change nothing: SQLite
    /// plans when it prepares, whatever the values bound.
    public func explain(_ sql: ParsedSQL, _ parameters: [SQLValue], options: QueryOptions) throws -> [String] {
        let plan = ParsedSQL(segments: [.sql("EXPLAIN QUERY PLAN ")] + sql.segments, dialect: .sqlite)
        let cursor = try self.query(plan, parameters, options: QueryOptions())
        defer { cursor.close() }
        // id → depth; the rows come parents first.
        var depths: [Int64: Int] = [0: 0]
        var lines: [String] = []
        while try cursor.next() {
            guard case .integer(let id) = cursor.value(at: 0), case .integer(let parent) = cursor.value(at: 1),
                case .text(let detail) = cursor.value(at: 3)
            else { continue }
            let depth = (depths[parent] ?? 0) + 1
            depths[id] = depth
            lines.append(String(repeating: "  ", count: depth - 1) + detail)
        }
        return lines
    }
}
