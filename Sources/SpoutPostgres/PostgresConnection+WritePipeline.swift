#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLibPQ
import SpoutCore

extension PostgresConnection {
    /// Sends the statements in libpq pipeline mode, the socket non-blocking, within the open
    /// transaction (one is opened first when the connection needs it, as
    /// ``execute(_:_:)`` would): no sync point until the end, so the transaction runs them all.
    /// Answers are read only when the window is full, or the statements in flight hold
    /// ``PostgresWritePipeline/maximumBytesInFlight`` of parameters (then down to half of
    /// either, after a flush request), and at the end; ``SpoutCore/WritePipeline/flush()``
    /// only writes. With `keepsRows`, each statement's rows are decoded as its result arrives.
    public func withWritePipeline<T>(
        window: Int, keepsRows: Bool, answered: (WriteAnswer) throws -> Void, _ body: (any WritePipeline) throws -> T
    ) throws -> T {
        let handle = try self.idleHandle()
        try self.openImplicitTransactionIfNeeded()
        try self.obey(self.stateMachine.eventDrivenStarted())
        return try withoutActuallyEscaping(answered) { answered in
            let pipeline = PostgresWritePipeline(
                connection: self, handle: handle, window: max(1, window), keepsRows: keepsRows, answered: answered)
            let value: T
            do {
                try pipeline.start()
                value = try body(pipeline)
            } catch {
                // The answers in flight come first: an earlier statement's failure wins.
                try pipeline.finish()
                throw error
            }
            try pipeline.finish()
            return value
        }
    }
}

/// One ``PostgresConnection/withWritePipeline(window:keepsRows:answered:_:)``: the statements sent and
/// not yet answered, read back in order.
///
/// It owns its connection (in the state machine's event-driven state) from ``start()`` until
/// ``finish()`` returns or throws; it is used on the calling thread only.
final class PostgresWritePipeline: WritePipeline {
    /// A result the server owes, in the order it comes.
    private enum Expected {
        /// The prepare queued for statement `statement`, under `name` for `key`.
        case prepare(statement: Int, name: String, key: String)
        /// Statement `number`'s result; its parameters held `bytes`.
        case statement(Int, bytes: Int)
        /// The sync point that ends the pipeline.
        case sync
    }

    private enum State {
        case sending
        /// Failed (the first failure), reading what is left up to the sync point.
        case failed(any Error)
        /// Read through the sync point and out of pipeline mode.
        case ended((any Error)?)
    }

    /// The parameter bytes of the statements in flight at which answers are read, whatever
    /// the window: a window of large records stays a few MiB.
    static let maximumBytesInFlight = 4 << 20

    private let connection: PostgresConnection
    private let handle: OpaquePointer
    private let socket: Int32
    private let window: Int
    private let keepsRows: Bool
    private let answered: (WriteAnswer) throws -> Void

    private var state = State.sending
    /// The results owed, oldest first from `head`.
    private var expected: [Expected] = []
    private var head = 0
    /// Statements sent, and the number of the oldest one not answered.
    private var sent = 0
    private var oldestUnanswered = 0
    /// The parameter bytes of the statements sent and not answered.
    private var bytesInFlight = 0
    /// The answer of the statement being read, once its result arrived.
    private var answer: WriteAnswer?
    /// Prepares queued and not answered yet, by key.
    private var pending: [String: String] = [:]
    /// The last statement sent by name, and that name: a bulk write sends one statement
    /// over and over, found again without building and hashing its key.
    private var lastNamed: (text: String, types: String, name: String)?
    private var isFlushing = false
    private var syncQueued = false

    init(
        connection: PostgresConnection, handle: OpaquePointer, window: Int, keepsRows: Bool, answered: @escaping (WriteAnswer) throws -> Void
    ) {
        self.connection = connection
        self.handle = handle
        self.socket = PQsocket(handle)
        self.window = window
        self.keepsRows = keepsRows
        self.answered = answered
    }

    /// Enters pipeline mode.
    func start() throws {
        self.connection.statementStarting()
        guard PQsetnonblocking(self.handle, 1) == 0, PQenterPipelineMode(self.handle) == 1 else {
            self.lose()
            try self.throwIfEnded()
            return
        }
    }

    func send(_ statement: BoundStatement) throws {
        try self.throwIfEnded()
        let number = self.sent
        self.sent += 1
        let parameters: PostgresTextParameters
        do {
            parameters = try PostgresTextParameters(statement.parameters)
        } catch {
            // Nothing of it was sent; the statements before it are answered first, and a
            // failure among them comes first.
            self.queueSync()
            self.readToEnd()
            if case .ended(.none) = self.state {
                self.state = .ended(WritePipelineFailure(statement: number, error: error))
            }
            try self.throwIfEnded()
            return
        }
        let text = statement.sql.text
        let types = parameters.typeSignature
        let name: String?
        if let last = self.lastNamed, last.text == text, last.types == types {
            name = last.name
        } else {
            switch self.connection.pipelinedName(for: text, parameters, pending: &self.pending, handle: self.handle) {
            case .unnamed: name = nil
            case .prepared(let prepared): name = prepared
            case .preparing(let newName, let key):
                self.expected.append(.prepare(statement: number, name: newName, key: key))
                name = newName
            case .sendFailed:
                self.lose()
                try self.throwIfEnded()
                return
            }
            self.lastNamed = name.map { (text, types, $0) }
        }
        self.connection.statistics.recordStatement()
        guard self.connection.send(text, prepared: name, parameters, handle: self.handle) == 1 else {
            self.lose()
            try self.throwIfEnded()
            return
        }
        self.expected.append(.statement(number, bytes: parameters.byteCount))
        self.bytesInFlight += parameters.byteCount
        if self.sent - self.oldestUnanswered >= self.window || self.bytesInFlight >= Self.maximumBytesInFlight {
            try self.readAnswers(downTo: self.window / 2)
        }
    }

    func flush() throws {
        try self.throwIfEnded()
        while true {
            switch PQflush(self.handle) {
            case 0: return
            case 1:
                // The server reads no more until its answers are read: read them meanwhile.
                guard self.wait(writing: true) else { break }
                guard self.readAvailable() else { break }
                continue
            default:
                self.lose()
            }
            try self.throwIfEnded()
            return
        }
    }

    /// Ends the pipeline: a sync point, every answer read, pipeline mode left. Throws the
    /// first failure; after one, throws it again.
    func finish() throws {
        if case .ended(.none) = self.state { return }
        self.queueSync()
        self.readToEnd()
        if case .ended(.none) = self.state { return }
        try self.throwIfEnded()
    }

    // MARK: Reading

    /// Waits for answers until at most `limit` statements, and half the bytes allowed, are
    /// unanswered.
    private func readAnswers(downTo limit: Int) throws {
        guard PQsendFlushRequest(self.handle) == 1 else {
            self.lose()
            try self.throwIfEnded()
            return
        }
        while self.sent - self.oldestUnanswered > limit || self.bytesInFlight > Self.maximumBytesInFlight / 2 {
            let read = self.head
            guard self.flushSome(), self.readAvailable() else { break }
            guard case .sending = self.state else { break }
            if self.head == read {
                guard self.wait(writing: self.isFlushing) else { break }
            }
        }
        guard case .sending = self.state else {
            self.readToEnd()
            try self.throwIfEnded()
            return
        }
    }

    /// Reads every answer owed, through the sync point (queued first after a failure), and
    /// leaves pipeline mode.
    private func readToEnd() {
        if case .ended = self.state { return }
        while self.head < self.expected.count {
            let read = self.head
            guard self.flushSome(), self.readAvailable() else { return }
            if self.head == read {
                guard self.wait(writing: self.isFlushing) else { return }
            }
        }
        self.end()
    }

    /// Sends what libpq holds, as far as the socket takes it; false once the connection failed.
    private func flushSome() -> Bool {
        guard let pending = self.connection.flushOutput(self.handle) else {
            self.lose()
            return false
        }
        self.isFlushing = pending
        return true
    }

    /// Waits, under the connection's answer deadline, until the socket is readable (or
    /// writable, with `writing`); false once the connection failed.
    private func wait(writing: Bool) -> Bool {
        // Bytes OpenSSL decrypted and libpq has not read never make the socket readable.
        if PostgresTLSBuffer.hasUnreadBytes(self.handle) { return true }
        let owed = max(1, self.sent - self.oldestUnanswered)
        let ready = self.connection.awaitingAnswer(statements: owed) { () -> Bool in
            var descriptor = pollfd(fd: self.socket, events: Int16(POLLIN) | (writing ? Int16(POLLOUT) : 0), revents: 0)
            while poll(&descriptor, 1, -1) < 0 {
                guard errno == EINTR else { return false }
            }
            return true
        }
        guard ready else {
            self.lose()
            return false
        }
        return true
    }

    /// Reads what the socket has and handles every result libpq can deliver without waiting.
    /// False once the connection failed.
    private func readAvailable() -> Bool {
        guard PQconsumeInput(self.handle) == 1 else {
            self.lose()
            return false
        }
        while self.head < self.expected.count, PQisBusy(self.handle) == 0 {
            let result = PQgetResult(self.handle)
            if case .sync = self.expected[self.head] {
                // A sync point answers with one result of its own, and no null after it.
                guard let result else { break }
                let status = PQresultStatus(result)
                PQclear(result)
                guard status == PGRES_PIPELINE_SYNC else {
                    self.lose(DatabaseError(.connectionLost, message: "unexpected result after a pipeline"))
                    return false
                }
                self.head += 1
                continue
            }
            guard let result else {
                self.endExpected()
                continue
            }
            if PQresultStatus(result) == PGRES_PIPELINE_SYNC {
                PQclear(result)
                // After a failure libpq may end the skipped statements at the sync point,
                // without a result for each: the sync ends them all.
                guard case .failed = self.state else {
                    self.lose(DatabaseError(.connectionLost, message: "unexpected sync result in a pipeline"))
                    return false
                }
                self.oldestUnanswered = self.sent
                self.bytesInFlight = 0
                self.head = self.expected.count
                break
            }
            self.read(result)
            PQclear(result)
        }
        if PQstatus(self.handle) == CONNECTION_BAD {
            self.lose()
            return false
        }
        if self.head > 4096 && self.head * 2 > self.expected.count {
            self.expected.removeFirst(self.head)
            self.head = 0
        }
        return true
    }

    /// A result of the oldest expected command (not the sync point).
    private func read(_ result: OpaquePointer) {
        let status = PQresultStatus(result)
        switch (self.expected[self.head], status) {
        case (.prepare(_, let name, let key), PGRES_COMMAND_OK):
            self.connection.statementNames.prepared(key, as: name)
            self.pending[key] = nil
        case (.statement, PGRES_COMMAND_OK):
            self.answer = WriteAnswer(changed: Int(String(cString: PQcmdTuples(result))) ?? 0)
        case (.statement, PGRES_TUPLES_OK):
            var rows: QueryResult?
            if self.keepsRows { self.connection.decode(result, into: &rows) }
            self.answer = WriteAnswer(changed: Int(String(cString: PQcmdTuples(result))) ?? 0, rows: rows)
        case (_, PGRES_PIPELINE_ABORTED):
            // Skipped after the failure already recorded.
            break
        case (.prepare(let statement, _, let key), _):
            self.pending[key] = nil
            self.fail(WritePipelineFailure(statement: statement, error: self.connection.makeError(result)))
        case (.statement(let number, _), _):
            self.fail(WritePipelineFailure(statement: number, error: self.connection.makeError(result)))
        case (.sync, _):
            break
        }
    }

    /// The oldest expected command has no more results: a statement's answer goes to
    /// `answered` unless the pipeline failed.
    private func endExpected() {
        if case .statement(_, let bytes) = self.expected[self.head] {
            self.oldestUnanswered += 1
            self.bytesInFlight -= bytes
            if case .sending = self.state, let answer = self.answer {
                do {
                    try self.answered(answer)
                } catch {
                    self.fail(error)
                }
            }
            self.answer = nil
        }
        self.head += 1
    }

    // MARK: Ending

    /// Queues the sync point that ends the pipeline, once.
    private func queueSync() {
        guard !self.syncQueued else { return }
        if case .ended = self.state { return }
        self.syncQueued = true
        guard PQpipelineSync(self.handle) == 1 else {
            self.lose()
            return
        }
        self.expected.append(.sync)
    }

    /// Records the pipeline's first failure; the server skips the rest until the sync point,
    /// queued now.
    private func fail(_ error: any Error) {
        guard case .sending = self.state else { return }
        self.state = .failed(error)
        self.queueSync()
    }

    /// The connection is lost or unusable: the pipeline ends with the database's error (or
    /// `error`), naming the oldest statement not answered, and the pool discards the connection.
    private func lose(_ error: DatabaseError? = nil) {
        if case .ended = self.state { return }
        let cause = error ?? self.connection.makeError(nil)
        self.connection.markBroken()
        let lost = cause.code == .connectionLost || cause.code == .notAnswering
            ? cause : DatabaseError(.connectionLost, message: cause.message)
        switch self.state {
        case .failed(let first): self.state = .ended(first)
        default: self.state = .ended(WritePipelineFailure(statement: self.oldestUnanswered, error: lost))
        }
        self.connection.stateMachine.eventDrivenEnded()
    }

    /// Read through the sync point: leaves pipeline and non-blocking mode.
    private func end() {
        if PQexitPipelineMode(self.handle) != 1 || PQsetnonblocking(self.handle, 0) != 0 {
            self.connection.markBroken()
        }
        self.connection.stateMachine.eventDrivenEnded()
        self.connection.noteTransactionState()
        switch self.state {
        case .failed(let error): self.state = .ended(error)
        default: self.state = .ended(.none)
        }
    }

    /// Throws the failure that ended (or is ending) the pipeline, if any.
    private func throwIfEnded() throws {
        switch self.state {
        case .sending: return
        case .failed(let error): throw error
        case .ended(let error):
            if let error { throw error }
            throw DatabaseError(.other, message: "the write pipeline has ended")
        }
    }
}

