import CLibPQ
import SpoutCore

extension PostgresConnection {
    /// PostgreSQL's plan of what ``query(_:_:options:)`` would send (see
    /// ``SpoutCore/DatabaseConnection/explain(_:_:options:)``): `EXPLAIN DECLARE` for an
    /// interleaved query (which needs the caller's transaction, whose `SET LOCAL` settings it
    /// sees), `EXPLAIN EXECUTE` of the prepared statement, or `EXPLAIN` of the unnamed
    /// statement with the values bound. Runs nothing but `EXPLAIN` (and the `PREPARE` a query
    /// would have made).
    public func explain(_ sql: ParsedSQL, _ parameters: [SQLValue], options: QueryOptions) throws -> [String] {
        let handle = try self.idleHandle()
        var bound = try PostgresTextParameters(parameters)
        let statement: String
        if options.interleaved {
            guard PQtransactionStatus(handle) != PQTRANS_IDLE else {
                throw DatabaseError(.unsupported, message: "an interleaved query needs an open transaction: call begin(readOnly:) first")
            }
            statement = "EXPLAIN DECLARE spout_explain NO SCROLL CURSOR FOR \(sql.text)"
        } else {
            try self.openImplicitTransactionIfNeeded()
            if !options.planForValues, let name = try self.preparedStatementName(for: sql.text, bound, handle: handle) {
                let values = try parameters.map { try self.literal($0, handle: handle) }
                statement = "EXPLAIN EXECUTE \(name)" + (values.isEmpty ? "" : "(\(values.joined(separator: ", ")))")
                bound = try PostgresTextParameters([])
            } else {
                statement = "EXPLAIN \(sql.text)"
            }
        }
        self.statementStarting()
        let result = self.awaitingAnswer {
            bound.withUnsafeCValues { count, values, types in PQexecParams(handle, statement, count, types, values, nil, nil, 0) }
        }
        defer {
            PQclear(result)
            self.noteTransactionState()
        }
        guard let result, PQresultStatus(result) == PGRES_TUPLES_OK else {
            throw self.makeError(result)
        }
        return (0..<PQntuples(result)).map { String(cString: PQgetvalue(result, $0, 0)) }
    }

    /// The `rows=N` of a line of `EXPLAIN`'s text (`Seq Scan on pet  (cost=0.00..18.50 rows=850 width=68)`):
    /// the last on the line, as a name in it may hold the same letters.
    static func estimatedRows(inPlanLine line: String) -> Int? {
        guard let marker = line.range(of: " rows=", options: .backwards) else { return nil }
        return Int(line[marker.upperBound...].prefix { $0.isASCII && $0.isNumber })
    }

    /// `value` as an SQL literal of unknown type (`'Haddad'`, `NULL`), which `EXECUTE` converts
    /// to the prepared statement's parameter type as a bound value would be.
    private func literal(_ value: SQLValue, handle: OpaquePointer) throws -> String {
        guard !value.isNull else { return "NULL" }
        var text: [UInt8] = []
        value.appendPostgresText(to: &text)
        guard let escaped = text.withUnsafeBufferPointer({ buffer in
            buffer.withMemoryRebound(to: CChar.self) { PQescapeLiteral(handle, $0.baseAddress, $0.count) }
        }) else {
            throw self.makeError(nil)
        }
        defer { PQfreemem(escaped) }
        return String(cString: escaped)
    }
}
