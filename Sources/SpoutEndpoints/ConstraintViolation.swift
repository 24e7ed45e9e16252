import HTTPTypes
import SpoutCore
import SpoutHTTP

/// A unique or NOT NULL violation traced back to the parameter whose argument caused it: the
/// response is the database error's (409 or 422, the same `error` text) and names the
/// parameter, with the value sent, as an argument error does:
/// `409 {"error":"unique violation","parameter":"name","value":"Rex"}`.
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

/// Traces an endpoint's unique and NOT NULL violations back to its parameters
/// (``ConstraintViolation``): the columns the database names (PostgreSQL names a unique
/// violation's index, whose key columns are read from the catalog), the statement's
/// ``SpoutCore/AssignedColumns``, and the request's arguments.
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
    /// PostgreSQL unique violation costs one catalog query on `database`; when that fails the
    /// error is returned as it is.
    func trace(_ error: any Error, arguments: [String: SQLValue], on database: Database) async -> any Error {
        guard let databaseError = error as? DatabaseError, let violated = databaseError.violated else { return error }
        var columns = violated.columns
        if columns.isEmpty, let index = violated.index, let schema = violated.schema {
            columns = (try? await Self.keyColumns(of: index, schema: schema, on: database)) ?? []
        }
        let table = violated.table
        let parameters = Set(columns.compactMap { self.assigned.parameter(forColumn: $0, of: table) }.filter { self.parameterNames.contains($0) })
        guard parameters.count == 1, let parameter = parameters.first else { return error }
        let value = arguments[parameter].flatMap { $0 == .null ? nil : $0.requestText(null: "", bytes: { "\($0) bytes" }) }
        return ConstraintViolation(error: databaseError, parameter: parameter, value: value)
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
        let result = try await database.withSession(DatabaseWork(readOnly: true)) { session in
            try await session.run { connection in
                try connection.queryAll([BoundStatement(sql, parameters)])
            }
        }
        var columns: [String] = []
        for row in result.first?.rows ?? [] {
            guard case .text(let name)? = row.first else { return [] }
            columns.append(name)
        }
        return columns
    }
}
