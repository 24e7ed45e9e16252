import Synchronization

/// The connections of one ``Database`` that read results whole for many requests at once
/// (``SharedReadingConnection``), and the rule that lends them: the one owner of which read
/// shares a connection.
///
/// Contract:
/// - ``reader(statementTimeout:format:)`` never blocks and never waits: it returns an open
///   connection for a read now, or nil (the read then leases a connection of its own, as
///   without sharing). Nil for a stored file, when the work asks another statement timeout
///   than the connections have, before the first connection is open, after ``close()``, and
///   when every open connection has had a read in flight for longer than ``stallLimit`` (a
///   slow statement: the reads behind it wait for it, so no more join them).
/// - Among the others it lends the connection with the fewest reads in flight.
/// - It keeps ``count`` connections open: each one missing (not opened yet, or broken and
///   closed) is opened on the database's threads, one at a time, when a read asks; a failed
///   open is tried again after ``retryDelay``. A driver that cannot share
///   (``SharedReadingDriver/openSharedReader(statementTimeout:statistics:)`` returns nil) turns
///   sharing off for good.
/// - After ``close()``, ``closed()`` returns once every connection is closed.
public final class SharedReaders: Sendable {
    /// How many connections are kept.
    public let count: Int
    /// The statement timeout of the connections, in milliseconds (0: none).
    public let statementTimeout: Int
    /// A connection whose oldest read has been in flight this long takes no more reads.
    public static let stallLimit: Duration = .milliseconds(20)
    /// How long after a failed open the next is tried.
    static let retryDelay: Duration = .seconds(1)

    private let driver: any SharedReadingDriver
    private let statistics: QueryStatistics
    private let threads: DatabaseThreads
    private let state = Mutex(State())

    private struct State {
        var connections: [any SharedReadingConnection] = []
        /// The open in progress, if any.
        var opening: Task<Void, Never>?
        /// The connections ``close()`` closed, and those opened after it.
        var closing: [any SharedReadingConnection] = []
        var closed = false
        /// The driver cannot share: no more opens.
        var unsupported = false
        /// No open before this instant (after a failure).
        var notBefore: ContinuousClock.Instant?
    }

    init(driver: any SharedReadingDriver, count: Int, statementTimeout: Int, statistics: QueryStatistics, threads: DatabaseThreads) {
        self.driver = driver
        self.count = count
        self.statementTimeout = statementTimeout
        self.statistics = statistics
        self.threads = threads
    }

    /// Whether `work` may read on a shared connection: read-only, not a stream, outside an
    /// explicit transaction (each shared read is an implicit transaction of its own).
    public func mayServe(_ work: DatabaseWork) -> Bool {
        work.readOnly && !work.isStream && (work.transaction == .none || work.transaction == .read)
    }

    /// A connection to read on now, or nil (see the type's contract). `statementTimeout`: the
    /// work's own, in milliseconds; nil for the database's. Nil for a stored file
    /// (``OutputFormat/raw(mediaType:)``): a file may be megabytes, and a shared connection
    /// bounds its reads in flight by time, not size, where a leased one holds one at a time.
    public func reader(statementTimeout: Int?, format: OutputFormat) -> (any SharedReadingConnection)? {
        if case .raw = format { return nil }
        if let statementTimeout, statementTimeout != self.statementTimeout { return nil }
        let now = ContinuousClock.now
        return self.state.withLock { state -> (any SharedReadingConnection)? in
            guard !state.closed, !state.unsupported else { return nil }
            state.connections.removeAll { connection in
                guard connection.isBroken else { return false }
                connection.close()
                return true
            }
            let index = Self.choose(state.connections.map(\.load))
            if state.connections.count < self.count && state.opening == nil && (state.notBefore.map { now >= $0 } ?? true) {
                state.opening = self.openOne()
            }
            return index.map { state.connections[$0] }
        }
    }

    /// The connection to lend among those with `loads`, or nil: the fewest reads in flight
    /// among those whose oldest read has waited less than ``stallLimit`` (the first of equals).
    static func choose(_ loads: [SharedReaderLoad]) -> Int? {
        var best: (index: Int, inFlight: Int)?
        for (index, load) in loads.enumerated() {
            if let waited = load.oldestWaited, waited >= Self.stallLimit { continue }
            if best.map({ load.inFlight < $0.inFlight }) ?? true { best = (index, load.inFlight) }
        }
        return best?.index
    }

    /// Opens a connection on the database's threads and adds it (or closes it, when the
    /// readers were closed meanwhile).
    private func openOne() -> Task<Void, Never> {
        Task {
            let outcome: Result<(any SharedReadingConnection)?, any Error>
            do {
                let driver = self.driver
                let timeout = self.statementTimeout
                let statistics = self.statistics
                outcome = .success(try await self.threads.run { try driver.openSharedReader(statementTimeout: timeout, statistics: statistics) })
            } catch {
                outcome = .failure(error)
            }
            self.state.withLock { state in
                state.opening = nil
                switch outcome {
                case .success(let connection?):
                    if state.closed {
                        connection.close()
                        state.closing.append(connection)
                    } else {
                        state.connections.append(connection)
                    }
                case .success(nil):
                    state.unsupported = true
                case .failure:
                    state.notBefore = ContinuousClock.now + Self.retryDelay
                }
            }
        }
    }

    /// Closes the connections (their reads in flight fail); later reads lease connections of
    /// their own.
    public func close() {
        self.state.withLock { state in
            state.closed = true
            state.connections.forEach { $0.close() }
            state.closing += state.connections
            state.connections = []
        }
    }

    /// After ``close()``: returns once every connection open then, or being opened, is closed
    /// (a broken one closes by itself as it breaks).
    public func closed() async {
        await self.state.withLock { $0.opening }?.value
        for connection in self.state.withLock({ $0.closing }) {
            await connection.closed()
        }
    }

    /// The connections open now (for tests and metrics).
    public var openCount: Int {
        self.state.withLock { $0.connections.count }
    }
}
