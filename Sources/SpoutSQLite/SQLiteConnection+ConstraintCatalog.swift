import SpoutCore

/// SQLite reports a CHECK by its name or expression and a foreign key by nothing, and never
/// the table: both are looked for on the written table. A CHECK's columns are those of the
/// table's columns its declaration in `CREATE TABLE` uses (``SpoutCore/CheckConstraints``;
/// two queries). A foreign key is found by looking the written values up in each parent
/// (`pragma_foreign_key_list`, then one query per key): the one key whose parent lacks the
/// row is it. A key whose columns were not all given by the caller cannot be checked, so
/// nothing is named then; a key holding a NULL references nothing and holds.
extension SQLiteConnection: ConstraintCatalogReading {
    public func violatedColumns(_ violated: ViolatedConstraint, writtenTable: String?, values: [String: SQLValue]) throws -> [String] {
        guard violated.columns.isEmpty, let table = writtenTable else { return violated.columns }
        if let check = violated.check { return try self.checkColumns(check, table: table) }
        if violated.foreignKey != nil { return try self.foreignKeyColumns(table: table, values: values) }
        return []
    }

    private func checkColumns(_ check: String, table: String) throws -> [String] {
        let create = try ParsedSQL.cached(
            "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = :table COLLATE NOCASE", dialect: .sqlite)
        let names = try ParsedSQL.cached("SELECT name FROM pragma_table_info(:table)", dialect: .sqlite)
        let arguments: [String: SQLValue] = ["table": .text(table)]
        let results = try self.queryAll([
            BoundStatement(create, try create.bind(arguments)), BoundStatement(names, try names.bind(arguments)),
        ])
        guard results.count == 2, let createTable = Self.texts(results[0]).first else { return [] }
        return CheckConstraints.columns(ofCheck: check, createTable: createTable, columns: Self.texts(results[1])) ?? []
    }

    private func foreignKeyColumns(table: String, values: [String: SQLValue]) throws -> [String] {
        let list = try ParsedSQL.cached(
            "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(:table) ORDER BY id, seq", dialect: .sqlite)
        let rows = try self.queryAll([BoundStatement(list, try list.bind(["table": .text(table)]))]).first?.rows ?? []
        // The rows come by key (`id`), each key's columns in order.
        var keys: [[[SQLValue]]] = []
        for row in rows {
            if let last = keys.last?.first, last[0] == row[0] { keys[keys.count - 1].append(row) } else { keys.append([row]) }
        }
        var missing: [[String]] = []
        for key in keys {
            guard case .text(let parent)? = key.first?[1] else { return [] }
            var targets = key.map { row -> String? in
                if case .text(let target) = row[3] { return target }
                return nil
            }
            if targets.contains(nil) {
                // A key that names no parent column references the parent's primary key.
                let primary = try ParsedSQL.cached("SELECT name FROM pragma_table_info(:table) WHERE pk > 0 ORDER BY pk", dialect: .sqlite)
                let names = Self.texts(try self.queryAll([BoundStatement(primary, try primary.bind(["table": .text(parent)]))]).first)
                guard names.count == key.count else { return [] }
                targets = names
            }
            var conditions: [String] = []
            var bound: [String: SQLValue] = [:]
            var from: [String] = []
            for (position, row) in key.enumerated() {
                guard case .text(let child) = row[2], let target = targets[position], let value = values[child.lowercased()] else { return [] }
                if value == .null {
                    conditions = []
                    break
                }
                conditions.append("\(Self.quoteIdentifier(target)) = :v\(position)")
                bound["v\(position)"] = value
                from.append(child)
            }
            if conditions.isEmpty { continue }
            let probe = try ParsedSQL(
                "SELECT 1 FROM \(Self.quoteIdentifier(parent)) WHERE \(conditions.joined(separator: " AND ")) LIMIT 1", dialect: .sqlite)
            let found = try self.queryAll([BoundStatement(probe, try probe.bind(bound))]).first?.rows ?? []
            if found.isEmpty { missing.append(from) }
        }
        return missing.count == 1 ? missing[0] : []
    }
}
