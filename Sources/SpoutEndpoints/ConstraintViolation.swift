import HTTPTypes
import SpoutCore
import SpoutHTTP

/// A unique, NOT NULL, CHECK or foreign-key violation traced back to the parameter whose
/// argument caused it: the response is the database error's (409 or 422, the same `error` text) and names the
/// parameter, with the value sent, as an argument error does:
/// `409 {"error":"unique violation","parameter":"name","value":"Rex"}`,
/// `422 {"error":"constraint violation","parameter":"color","value":"purple"}`.
///
/// Only what the caller sent is shown (the parameter's name and its argument), never the
/// database's message, the constraint's name or the table's.
struct ConstraintViolation: Error, HTTPResponseError, CustomStringConvertible, CustomDebugStringConvertible {
    let error: DatabaseError
    let parameter: String
    /// The argument as Spout read it, written as a request writes it (``SpoutCore/SQLValue/requestText(null:bytes:)``:
    /// a date in ISO 8601); nil when the request sent none (a NOT NULL column the parameter
    /// left empty).
    let value: String?

    var status: HTTPResponse.Status { self.error.status }

    var responseBody: [UInt8] {
        var object = JSONObjectWriter()
        object.add("error", self.error.code.name)
        object.add("parameter", self.parameter)
        if let value = self.value { object.add("value", value) }
        return object.finished
    }

    var description: String { "\(self.error) (parameter \(self.parameter))" }
    var debugDescription: String { "\(String(reflecting: self.error)) (parameter \(self.parameter))" }
}

/// Traces an endpoint's unique, NOT NULL, CHECK and foreign-key violations back to its
/// parameters (``ConstraintViolation``): the columns the database names (PostgreSQL names a
/// unique violation's index and the constraint of the others, whose columns are read from the
/// catalog; SQLite reports a CHECK by its name or expression, found in the written table's
/// `CREATE TABLE`, and a foreign key by nothing, found by looking its values up), the
/// statement's ``SpoutCore/AssignedColumns``, and the request's arguments.
///
/// A violation is traced when it is the written table's (not another table's, which a trigger
/// wrote) and exactly one of the constraint's columns is assigned from a parameter the request
/// may carry (not a token's claim): for a key `(owner, name)` with owner from `:claims.sub`,
/// `name`. Otherwise the error is answered as it is.
struct ConstraintTracer: Sendable {
    let assigned: AssignedColumns
    /// The endpoint's parameters (path keys and declared ones).
    let parameterNames: Set<String>

    init(sql: String, parameterNames: Set<String>) {
        self.assigned = AssignedColumns(sql: sql)
        self.parameterNames = parameterNames
    }

    /// Whether `error` is a violation this may trace.
    func mayTrace(_ error: any Error) -> Bool {
        guard !self.assigned.isEmpty, let error = error as? DatabaseError, error.violated != nil else { return false }
        return error.code == .uniqueViolation || error.code == .constraintViolation
    }

    /// `error` as a ``ConstraintViolation`` when it traces to one parameter, else `error`. A
    /// PostgreSQL unique, check or foreign-key violation costs one catalog query on `database`,
    /// a SQLite check violation two, a SQLite foreign-key violation one listing the written
    /// table's keys and one or two per key; when they fail the error is returned as it is.
    func trace(_ error: any Error, arguments: [String: SQLValue], on database: Database) async -> any Error {
        guard let databaseError = error as? DatabaseError, let violated = databaseError.violated else { return error }
        var columns = violated.columns
        if columns.isEmpty, let index = violated.index, let schema = violated.schema {
            columns = (try? await Self.keyColumns(of: index, schema: schema, on: database)) ?? []
        } else if columns.isEmpty, let check = violated.check {
            columns = (try? await self.checkColumns(check, violated: violated, on: database)) ?? []
        } else if columns.isEmpty, let foreignKey = violated.foreignKey {
            columns = (try? await self.foreignKeyColumns(foreignKey, violated: violated, arguments: arguments, on: database)) ?? []
        }
        let table = violated.table
        let parameters = Set(columns.compactMap { self.assigned.parameter(forColumn: $0, of: table) }.filter { self.parameterNames.contains($0) })
        guard parameters.count == 1, let parameter = parameters.first else { return error }
        let value = arguments[parameter].flatMap { $0 == .null ? nil : $0.requestText(null: "", bytes: { "\($0) bytes" }) }
        return ConstraintViolation(error: databaseError, parameter: parameter, value: value)
    }

    /// The columns of PostgreSQL's constraint `name` of kind `kind` (`c` a CHECK, `f` a foreign
    /// key) on the violation's table: its `conkey` in the catalog.
    private static func constraintColumns(_ name: String, kind: String, violated: ViolatedConstraint, on database: Database) async throws -> [String] {
        guard let table = violated.table, let schema = violated.schema else { return [] }
        let sql = try ParsedSQL.cached(
            """
            SELECT a.attname::text
            FROM pg_constraint c
            JOIN pg_class t ON t.oid = c.conrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
            WHERE c.contype = :kind AND c.conname = :name AND t.relname = :table AND n.nspname = :schema
            ORDER BY a.attnum
            """, dialect: .postgres)
        let arguments: [String: SQLValue] = ["kind": .text(kind), "name": .text(name), "table": .text(table), "schema": .text(schema)]
        return Self.texts(try await Self.read([BoundStatement(sql, try sql.bind(arguments))], on: database).first)
    }

    /// The columns of the foreign key that refused the row. PostgreSQL names it: its `conkey`.
    /// SQLite names none, so each foreign key of the written table whose columns the statement
    /// sets from parameters is checked against its parent table with the request's values (one
    /// query each); the one whose parent has no such row is it. Empty when none, or more than
    /// one, is missing, or when a foreign key's columns are not all set from parameters (its
    /// values are unknown here).
    private func foreignKeyColumns(
        _ name: String, violated: ViolatedConstraint, arguments: [String: SQLValue], on database: Database
    ) async throws -> [String] {
        switch database.dialect {
        case .postgres:
            return try await Self.constraintColumns(name, kind: "f", violated: violated, on: database)
        case .sqlite:
            guard let table = self.assigned.table else { return [] }
            let list = try ParsedSQL.cached(
                "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(:table) ORDER BY id, seq", dialect: .sqlite)
            let rows = try await Self.read([BoundStatement(list, try list.bind(["table": .text(table)]))], on: database).first?.rows ?? []
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
                    let names = Self.texts(try await Self.read([BoundStatement(primary, try primary.bind(["table": .text(parent)]))], on: database).first)
                    guard names.count == key.count else { return [] }
                    targets = names
                }
                var conditions: [String] = []
                var values: [String: SQLValue] = [:]
                var from: [String] = []
                for (position, row) in key.enumerated() {
                    guard case .text(let child) = row[2], let target = targets[position],
                        let parameter = self.assigned.parameter(forColumn: child), self.parameterNames.contains(parameter)
                    else { return [] }
                    let value = arguments[parameter] ?? .null
                    // A NULL in the key: the row references nothing, and the key holds.
                    if value == .null {
                        conditions = []
                        break
                    }
                    conditions.append("\(Self.quoted(target)) = :v\(position)")
                    values["v\(position)"] = value
                    from.append(child)
                }
                if conditions.isEmpty { continue }
                let probe = try ParsedSQL(
                    "SELECT 1 FROM \(Self.quoted(parent)) WHERE \(conditions.joined(separator: " AND ")) LIMIT 1", dialect: .sqlite)
                let found = try await Self.read([BoundStatement(probe, try probe.bind(values))], on: database).first?.rows ?? []
                if found.isEmpty { missing.append(from) }
            }
            return missing.count == 1 ? missing[0] : []
        }
    }

    /// `name` as a quoted SQL identifier.
    private static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The columns the CHECK `check` uses: on PostgreSQL its `conkey` in the catalog; on
    /// SQLite, whose report names no table, those of the written table whose `CREATE TABLE`
    /// declares it (``SpoutCore/CheckConstraints``); empty when it is not found there.
    private func checkColumns(_ check: String, violated: ViolatedConstraint, on database: Database) async throws -> [String] {
        switch database.dialect {
        case .postgres:
            return try await Self.constraintColumns(check, kind: "c", violated: violated, on: database)
        case .sqlite:
            guard let table = self.assigned.table else { return [] }
            let create = try ParsedSQL.cached(
                "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = :table COLLATE NOCASE", dialect: .sqlite)
            let names = try ParsedSQL.cached("SELECT name FROM pragma_table_info(:table)", dialect: .sqlite)
            let arguments: [String: SQLValue] = ["table": .text(table)]
            let results = try await Self.read(
                [BoundStatement(create, try create.bind(arguments)), BoundStatement(names, try names.bind(arguments))], on: database)
            guard results.count == 2, let createTable = Self.texts(results[0]).first else { return [] }
            return CheckConstraints.columns(ofCheck: check, createTable: createTable, columns: Self.texts(results[1])) ?? []
        }
    }

    /// Runs `statements` read-only, outside the request's session, and returns their results.
    private static func read(_ statements: [BoundStatement], on database: Database) async throws -> [QueryResult] {
        try await database.withSession(DatabaseWork(readOnly: true)) { session in
            try await session.run { connection in
                try connection.queryAll(statements)
            }
        }
    }

    /// The first column of every row of `result`, when each is text; empty otherwise.
    private static func texts(_ result: QueryResult?) -> [String] {
        var texts: [String] = []
        for row in result?.rows ?? [] {
            guard case .text(let text)? = row.first else { return [] }
            texts.append(text)
        }
        return texts
    }

    /// The key columns of PostgreSQL's index `index` in `schema`, in order; empty when one of
    /// them is an expression (no column to name).
    private static func keyColumns(of index: String, schema: String, on database: Database) async throws -> [String] {
        let sql = try ParsedSQL.cached(
            """
            SELECT a.attname::text
            FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, position)
            LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum AND k.attnum > 0
            WHERE c.relname = :index AND n.nspname = :schema AND k.position <= i.indnkeyatts
            ORDER BY k.position
            """, dialect: .postgres)
        let parameters = try sql.bind(["index": .text(index), "schema": .text(schema)])
        return Self.texts(try await Self.read([BoundStatement(sql, parameters)], on: database).first)
    }
}
