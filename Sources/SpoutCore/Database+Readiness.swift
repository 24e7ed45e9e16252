import Synchronization

extension Database {
    /// Whether the database answers `SELECT 1` within `limit`, through a read-only lease
    /// (waiting for one as a request would) whose statement timeout is `limit`. Never throws.
    ///
    /// A server that does not answer in time counts as not answering at once: the caller (a
    /// readiness probe, whose own timeout is short) never waits longer than `limit`, while the
    /// probe's statement goes on in the background until the server answers or its connection
    /// is given up (the statement timeout plus the driver's grace, see
    /// ``DatabaseConfiguration/answerGraceMilliseconds``).
    public func answers(within limit: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let first = FirstAnswer(continuation)
            Task {
                let answered: Void? = try? await self.withSession(DatabaseWork(readOnly: true, statementTimeout: limit)) { session in
                    try await session.run { connection in
                        let cursor = try connection.query(try ParsedSQL.cached("SELECT 1", dialect: connection.dialect), [], options: QueryOptions())
                        defer { cursor.close() }
                        _ = try cursor.next()
                    }
                }
                first.give(answered != nil)
            }
            Task {
                try? await Task.sleep(for: limit)
                first.give(false)
            }
        }
    }
}

/// Resumes a continuation with the first answer given; later ones are dropped.
private final class FirstAnswer: Sendable {
    private let continuation: Mutex<CheckedContinuation<Bool, Never>?>

    init(_ continuation: CheckedContinuation<Bool, Never>) {
        self.continuation = Mutex(continuation)
    }

    func give(_ answer: Bool) {
        self.continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }?.resume(returning: answer)
    }
}
