extension Database {
    /// Whether the database answers `SELECT 1` now, through a read-only lease (waiting for one
    /// at most the acquire timeout, as a request would). Never throws.
    public func answers() async -> Bool {
        let answered: Void? = try? await self.withSession(DatabaseWork(readOnly: true)) { session in
            try await session.run { connection in
                let cursor = try connection.query(try ParsedSQL.cached("SELECT 1", dialect: connection.dialect), [], options: QueryOptions())
                defer { cursor.close() }
                _ = try cursor.next()
            }
        }
        return answered != nil
    }
}
