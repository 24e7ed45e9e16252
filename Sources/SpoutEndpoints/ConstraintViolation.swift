import HTTPTypes
import SpoutCore
import SpoutHTTP

/// A unique, NOT NULL or CHECK violation traced back to the parameter whose argument caused
/// it: the response is the database error's (409 or 422, the same `error` text) and names the
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

/// Traces an endpoint's unique, NOT NULL and CHECK violations back to its parameters
/// (``ConstraintViolation``): the columns the database names (PostgreSQL names a unique
/// violation's index and a check violation's constraint, whose columns are read from the
/// catalog; SQLite reports a CHECK by its name or expression, found in the written table's
/// `CREATE TABLE`), the statement's ``SpoutCore/AssignedColumns``, and the request's arguments.
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
    /// PostgreSQL unique or check violation costs one catalog query on `database`, a SQLite
    /// check violation two; when they fail the error is returned as it is.
    func trace(_ error: any Error, arguments: [String: SQLValue], on database: Database) async -> any Error {
        guard let databaseError = error as? DatabaseError, let violated = databaseError.violated else { return error }
        var columns = violated.columns
        if columns.isEmpty, let index = violated.index, let schema = violated.schema {
            columns = (try? await Self.keyColumns(of: index, schema: schema, on: database)) ?? []
        } else if columns.isEmpty, let check = violated.check {
            columns = (try? await self.checkColumns(check, violated: violated, on: database)) ?? []
        }
        let table = violated.table
        let parameters = Set(columns.compactMap { self.assigned.parameter(forColumn: $0, of: table) }.filter { self.parameterNames.contains($0) })
        guard parameters.count == 1, let parameter = parameters.first else { return error }
        let value = arguments[parameter].flatMap { $0 == .null ? nil : $0.requestText(null: "", bytes: { "\($0) bytes" }) }
        return ConstraintViolation(error: databaseError, parameter: parameter, value: value)
    }

    /// The columns the CHECK `check` uses: on PostgreSQL its `conkey` in the catalog; on
    /// SQLite, whose report names no table, those of the written table whose `CREATE TABLE`
    /// declares it (``SpoutCore/CheckConstraints``); empty when it is not found there.
    private func checkColumns(_ check: String, violated: ViolatedConstraint, on database: Database) async throws -> [String] {
        switch database.dialect {
        case .postgres:
            guard let table = violated.table, let schema = violated.schema else { return [] }
            let sql = try ParsedSQL.cached(
                """
                SELECT a.attname::text
                FROM pg_constraint c
                JOIN pg_class t ON t.oid = c.conrelid
                JOIN pg_namespace n ON n.oid = t.relnamespace
                JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
                WHERE c.contype = 'c' AND c.conname = :check AND t.relname = :table AND n.nspname = :schema
                ORDER BY a.attnum
                """, dialect: .postgres)
            return try await Self.texts(
                try Self.read([BoundStatement(sql, try sql.bind(["check": .text(check), "table": .text(table), "schema": .text(schema)]))],
                on: database).first)
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
