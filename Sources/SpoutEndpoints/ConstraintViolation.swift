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
/// parameters (``ConstraintViolation``): the columns the database names, or those its driver
/// finds for the constraint it reports (``SpoutCore/ConstraintCatalogReading``), the
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

    /// `error` as a ``ConstraintViolation`` when it traces to one parameter, else `error`.
    /// When the database named no columns, the driver looks them up in a read-only session of
    /// its own (its cost: ``SpoutCore/ConstraintCatalogReading``); when that fails the error is
    /// returned as it is.
    func trace(_ error: any Error, arguments: [String: SQLValue], on database: Database) async -> any Error {
        guard let databaseError = error as? DatabaseError, let violated = databaseError.violated else { return error }
        var columns = violated.columns
        if columns.isEmpty {
            columns = (try? await self.catalogColumns(violated, arguments: arguments, on: database)) ?? []
        }
        let table = violated.table
        let parameters = Set(columns.compactMap { self.assigned.parameter(forColumn: $0, of: table) }.filter { self.parameterNames.contains($0) })
        guard parameters.count == 1, let parameter = parameters.first else { return error }
        let value = arguments[parameter].flatMap { $0 == .null ? nil : $0.requestText(null: "", bytes: { "\($0) bytes" }) }
        return ConstraintViolation(error: databaseError, parameter: parameter, value: value)
    }

    /// The violated constraint's columns as the driver finds them, given what the statement
    /// wrote from the caller's arguments (an argument not sent wrote NULL).
    private func catalogColumns(_ violated: ViolatedConstraint, arguments: [String: SQLValue], on database: Database) async throws -> [String] {
        var values: [String: SQLValue] = [:]
        for column in self.assigned.columns {
            guard let parameter = self.assigned.parameter(forColumn: column), self.parameterNames.contains(parameter) else { continue }
            values[column] = arguments[parameter] ?? .null
        }
        let table = self.assigned.table
        return try await database.withSession(DatabaseWork(readOnly: true)) { [values] session in
            try await session.run { connection in
                try (connection as? any ConstraintCatalogReading)?.violatedColumns(violated, writtenTable: table, values: values) ?? []
            }
        }
    }
}
