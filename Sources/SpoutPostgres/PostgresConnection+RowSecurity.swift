import SpoutCore

extension PostgresConnection {
    public func rolesBypassingRowSecurity(_ roles: [String?]) throws -> [String] {
        let sql = try ParsedSQL.cached(
            """
            SELECT rolname::text FROM pg_roles
            WHERE (rolsuper OR rolbypassrls)
              AND (rolname = current_user AND CAST(:login AS boolean) OR rolname = ANY(CAST(:names AS text[])))
            ORDER BY rolname
            """, dialect: .postgres)
        let names = roles.compactMap { $0 }
        let parameters = try sql.bind(["login": .bool(roles.contains { $0 == nil }), "names": .array(names.map(SQLValue.text))])
        let cursor = try self.query(sql, parameters, options: QueryOptions())
        defer { cursor.close() }
        var bypassing: [String] = []
        while try cursor.next() {
            if case .text(let name) = cursor.value(at: 0) { bypassing.append(name) }
        }
        return bypassing
    }
}
