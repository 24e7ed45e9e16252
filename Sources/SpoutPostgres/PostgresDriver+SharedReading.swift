import SpoutCore

/// PostgreSQL connections shared by many requests' whole reads (``PostgresSharedPipeline``),
/// on Linux (the reactor needs epoll) and with session state: behind a transaction pooler
/// (``PostgresDriver/keepsSessionState`` false) a pipeline of many transactions on one client
/// connection is not something every pooler passes on whole, so nothing is shared there.
extension PostgresDriver: SharedReadingDriver {
    public func openSharedReader(statementTimeout milliseconds: Int, statistics: QueryStatistics) throws -> (any SharedReadingConnection)? {
        #if os(Linux)
        guard self.keepsSessionState else { return nil }
        guard let connection = try self.connect(readOnly: true, statistics: statistics) as? PostgresConnection else { return nil }
        do {
            try connection.setReadOnly(true)
            try connection.setStatementTimeout(milliseconds: milliseconds)
            return try PostgresSharedPipeline(connection)
        } catch {
            connection.close()
            throw error
        }
        #else
        return nil
        #endif
    }
}
