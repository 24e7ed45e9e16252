import SpoutCore

/// Runs work inside one transaction.
enum Transaction {
    /// Runs `body` in a new transaction that commits when it returns and rolls back when it
    /// throws. When the connection is already in a transaction, `body` runs inside it and the
    /// caller decides (and must roll back after an error).
    static func run<Result>(on connection: any DatabaseConnection, _ body: () throws -> Result) throws -> Result {
        if connection.isInTransaction {
            return try body()
        }
        try connection.begin(readOnly: false)
        let result: Result
        do {
            result = try body()
        } catch {
            try? connection.rollback()
            throw error
        }
        do {
            try connection.commit()
        } catch {
            if connection.isInTransaction { try? connection.rollback() }
            throw DataLoadError(.database, "committing the load failed", underlying: error)
        }
        return result
    }
}
