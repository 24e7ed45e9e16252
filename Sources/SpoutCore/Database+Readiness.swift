extension Database {
    /// Whether the database answers `SELECT 1` now, through a read-only lease (waiting for one
    /// at most `acquireTimeout`, as a request would).
    ///
    /// - Parameter runBlocking: runs its argument (the statement, then releasing the lease) off
    ///   the caller's thread, such as on the server's thread pool, and returns its result;
    ///   throws when it did not run it.
    public func answers(runBlocking: @Sendable (@escaping @Sendable () -> Bool) async throws -> Bool) async -> Bool {
        guard let lease = try? await self.lease(readOnly: true) else { return false }
        do {
            return try await runBlocking {
                defer { lease.release() }
                let answered: Void? = try? lease.withConnection { connection in
                    let cursor = try connection.query(try ParsedSQL.cached("SELECT 1", dialect: connection.dialect), [], options: QueryOptions())
                    defer { cursor.close() }
                    _ = try cursor.next()
                }
                return answered != nil
            }
        } catch {
            // Not run (the pool has shut down): the lease is still held.
            lease.release()
            return false
        }
    }
}
