import Logging
import SpoutCore
import SpoutHTTP

/// The live notices of one database (docs/endpoints.md, Live notices): which open event
/// streams a change concerns, learned by polling the change log, at a cost that follows the
/// changes rather than the subscribers.
///
/// How it works:
/// - While anyone subscribes, one poll every ``LiveNoticeSettings/pollInterval`` reads the
///   change log's position and the changes since the last one (``SpoutCore/ChangeFeed``): one
///   round trip, through PgBouncer in transaction mode too, and across instances that share
///   only the database. A poll that fails is retried; the position stays, so nothing is lost.
/// - Subscribers with the same endpoint, arguments and identity form a ``NoticeGroup``,
///   evaluated once per batch. Only groups whose tables changed are looked at; a group that
///   holds a changed key knows without a query, any other runs its statement restricted to
///   the changed keys (``NoticeProbe``): one statement per affected group and batch of
///   changes, sent together for groups with the same role and claims.
/// - A subscriber that starts from a cursor (`since` or `Last-Event-ID`) is told at once when
///   its endpoint's tables changed since then.
/// - One tick a second writes heartbeats, ends streams whose token expired and drops
///   subscribers that left a notice unread too long (``NoticeSubscriber``).
public actor LiveNotices {
    nonisolated let database: Database
    nonisolated let settings: LiveNoticeSettings
    nonisolated let metrics: NoticeMetrics?
    nonisolated let logger: Logger
    /// The caps on event streams, per address and in all.
    nonisolated let admission: StreamAdmission

    private var feed: ChangeFeed?
    private var groups: [NoticeGroup.Key: NoticeGroup] = [:]
    private var groupsByTable: [String: Set<NoticeGroup.Key>] = [:]
    private var groupOfSubscriber: [Int: NoticeGroup.Key] = [:]
    private var poller: Task<Void, Never>?
    private var ticker: Task<Void, Never>?
    private var pollsFailing = false

    public init(database: Database, settings: LiveNoticeSettings, metrics: NoticeMetrics?, logger: Logger) {
        self.database = database
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        self.admission = StreamAdmission(limit: settings.maximumSubscribersPerAddress, total: settings.maximumSubscribers)
    }

    /// What a subscription asks for.
    struct Subscription: Sendable {
        var key: NoticeGroup.Key
        var probe: NoticeProbe
        var seal: @Sendable (Int64) -> String
        /// The position of the cursor it starts from (`Last-Event-ID`, else `since`); nil: now.
        var start: Int64?
    }

    /// Adds `subscriber` to its group (made, and its keys read, if it is the first) and starts
    /// polling if it is the first subscriber. Throws when the database cannot be reached for
    /// the log's position (no subscriber is added then).
    func subscribe(_ subscriber: NoticeSubscriber, to subscription: Subscription) async throws {
        if self.feed == nil {
            let position = try await self.readLog { try $0.changeLogPosition() }
            if self.feed == nil { self.feed = ChangeFeed(position: position.position) }
        }
        let group: NoticeGroup
        var created = false
        if let existing = self.groups[subscription.key] {
            group = existing
        } else {
            group = NoticeGroup(key: subscription.key, probe: subscription.probe, seal: subscription.seal)
            self.groups[group.key] = group
            for table in group.probe.tables { self.groupsByTable[table, default: []].insert(group.key) }
            created = true
            self.metrics?.groups.increment()
        }
        group.subscribers[subscriber.id] = subscriber
        self.groupOfSubscriber[subscriber.id] = group.key
        self.metrics?.subscribers.increment()
        self.startIfNeeded()
        let position = self.feed?.position ?? 0
        if created { await self.load(group) }
        if let start = subscription.start { await self.catchUp(subscriber, of: group, from: start, to: position) }
    }

    /// Removes `subscriber`; its group goes with its last subscriber, polling with the last group.
    func leave(_ subscriber: NoticeSubscriber) {
        guard let key = self.groupOfSubscriber.removeValue(forKey: subscriber.id) else { return }
        self.metrics?.subscribers.decrement()
        guard let group = self.groups[key] else { return }
        group.subscribers[subscriber.id] = nil
        guard group.subscribers.isEmpty else { return }
        self.groups[key] = nil
        self.metrics?.groups.decrement()
        for table in group.probe.tables {
            self.groupsByTable[table]?.remove(key)
            if self.groupsByTable[table]?.isEmpty == true { self.groupsByTable[table] = nil }
        }
        if self.groups.isEmpty {
            self.poller?.cancel()
            self.ticker?.cancel()
            self.poller = nil
            self.ticker = nil
            self.feed = nil
        }
    }

    /// How many statements evaluations have run, and groups there are (tests, benchmarks).
    var groupCount: Int { self.groups.count }

    // MARK: Subscribing

    private func startIfNeeded() {
        if self.poller == nil {
            self.poller = Task { [weak self] in
                while !Task.isCancelled, let self {
                    try? await Task.sleep(for: self.settings.pollInterval)
                    guard !Task.isCancelled else { return }
                    await self.poll()
                }
            }
        }
        if self.ticker == nil {
            self.ticker = Task { [weak self] in
                while !Task.isCancelled, let self {
                    try? await Task.sleep(for: .seconds(1))
                    await self.tick()
                }
            }
        }
    }

    /// Reads the keys of `group`'s result (at most ``LiveNoticeSettings/keysPerGroup``).
    private func load(_ group: NoticeGroup) async {
        let limit = self.settings.keysPerGroup
        let dialect = self.database.dialect
        let probe = group.probe
        do {
            let result = try await self.database.withSession(self.work(for: probe)) { session in
                try await session.run { connection in
                    try connection.queryAll([try probe.allKeys(limit: limit + 1, dialect: dialect)]).first
                }
            }
            self.metrics?.evaluationQueries.increment()
            group.keyColumns = result?.columns ?? []
            let rows = result?.rows ?? []
            if rows.count <= limit {
                group.held = Set(rows).union(group.typed(group.changedWhileLoading))
            }
        } catch {
            // Unknown: the group is told of every change to its tables.
            self.logger.warning(
                "live notices: a group's keys could not be read; it is told of every change to its tables",
                metadata: ["error": "\(String(reflecting: error))"])
        }
        group.isLoading = false
        group.changedWhileLoading = []
    }

    /// Tells `subscriber` at once when its endpoint's tables changed since `start`, or the log
    /// no longer reaches back that far.
    private func catchUp(_ subscriber: NoticeSubscriber, of group: NoticeGroup, from start: Int64, to position: Int64) async {
        let tables = group.probe.tables
        do {
            let changed = try await self.readLog { log -> Bool in
                let now = try log.changeLogPosition()
                if start <= now.horizon { return true }
                return try !log.changedKeys(since: start, tables: tables).isEmpty
            }
            guard changed else { return }
        } catch {
            // Unknown: better a notice too many.
            self.logger.notice("live notices: the changes since a subscriber's cursor could not be read; it is told to sync")
        }
        subscriber.notify(from: group.seal(start), to: group.seal(max(start, position)))
    }

    // MARK: Polling

    /// One poll: the log's position and new changes, then the groups they concern.
    private func poll() async {
        guard let from = self.feed?.position else { return }
        let read: (position: ChangeLogPosition, changes: [LoggedChange])
        do {
            read = try await self.readLog { try $0.changes(since: from) }
            self.metrics?.polls.increment()
            if self.pollsFailing {
                self.pollsFailing = false
                self.logger.notice("live notices: the change log is read again; no change is lost")
            }
        } catch {
            self.metrics?.pollFailures.increment()
            if !self.pollsFailing {
                self.pollsFailing = true
                self.logger.warning(
                    "live notices: cannot read the change log; trying again (subscribers keep their cursors)",
                    metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await Task.sleep(for: .seconds(1))
            return
        }
        guard var feed = self.feed, feed.position == from else { return }
        let batch = feed.advance(to: read.position, changes: read.changes)
        self.feed = feed
        await self.apply(batch)
    }

    /// Notifies the groups `batch` concerns.
    private func apply(_ batch: ChangeFeed.Batch) async {
        if batch.isPastHorizon {
            for group in self.groups.values { group.notify(from: batch.from, to: batch.to) }
            return
        }
        guard !batch.changes.isEmpty else { return }
        var keysByTable: [String: Set<[SQLValue]>] = [:]
        for change in batch.changes { keysByTable[change.table, default: []].insert(change.key) }
        var affected: Set<NoticeGroup.Key> = []
        for table in keysByTable.keys { affected.formUnion(self.groupsByTable[table] ?? []) }
        var evaluations: [Evaluation] = []
        for key in affected {
            guard let group = self.groups[key] else { continue }
            var changed: Set<[SQLValue]> = []
            for table in group.probe.tables { changed.formUnion(keysByTable[table] ?? []) }
            if group.isLoading {
                group.changedWhileLoading.formUnion(changed)
                group.notify(from: batch.from, to: batch.to)
                continue
            }
            guard let held = group.held else {
                group.notify(from: batch.from, to: batch.to)
                continue
            }
            let typed = group.typed(changed)
            if typed.isSubset(of: held) {
                self.metrics?.decidedWithoutQuery.increment()
                group.notify(from: batch.from, to: batch.to)
                continue
            }
            evaluations.append(Evaluation(group: key, probe: group.probe, keys: typed))
        }
        for (evaluation, outcome) in await self.evaluate(evaluations) {
            guard let group = self.groups[evaluation.group], let held = group.held else { continue }
            switch outcome {
            case .success(let present):
                let concerned = !present.isEmpty || !held.isDisjoint(with: evaluation.keys)
                let kept = held.subtracting(evaluation.keys).union(present)
                group.held = kept.count <= self.settings.keysPerGroup ? kept : nil
                if concerned { group.notify(from: batch.from, to: batch.to) }
            case .failure(let error):
                // Unknown: the keys may be the group's now; better a notice too many.
                self.logger.notice("live notices: a group could not be evaluated; it is told to sync", metadata: ["error": "\(error)"])
                group.held = held.union(evaluation.keys)
                group.notify(from: batch.from, to: batch.to)
            }
        }
    }

    /// One group's question for a batch: which of `keys` its result holds now.
    struct Evaluation: Sendable {
        var group: NoticeGroup.Key
        var probe: NoticeProbe
        var keys: Set<[SQLValue]>
    }

    /// Runs `evaluations`: those of one role and claims together (one round trip on
    /// PostgreSQL), up to ``LiveNoticeSettings/concurrentEvaluations`` connections at once.
    private nonisolated func evaluate(_ evaluations: [Evaluation]) async -> [(Evaluation, Result<Set<[SQLValue]>, any Error>)] {
        guard !evaluations.isEmpty else { return [] }
        var bySession: [RequestSession?: [Evaluation]] = [:]
        for evaluation in evaluations { bySession[evaluation.probe.session, default: []].append(evaluation) }
        var chunks: [[Evaluation]] = []
        for group in bySession.values {
            chunks.append(contentsOf: stride(from: 0, to: group.count, by: self.settings.evaluationsPerRoundTrip).map {
                Array(group[$0..<min($0 + self.settings.evaluationsPerRoundTrip, group.count)])
            })
        }
        return await withTaskGroup(of: [(Evaluation, Result<Set<[SQLValue]>, any Error>)].self) { tasks in
            var results: [(Evaluation, Result<Set<[SQLValue]>, any Error>)] = []
            var next = 0
            func add() {
                guard next < chunks.count else { return }
                let chunk = chunks[next]
                next += 1
                tasks.addTask { await self.evaluate(chunk: chunk) }
            }
            for _ in 0..<max(1, self.settings.concurrentEvaluations) { add() }
            while let done = await tasks.next() {
                results.append(contentsOf: done)
                add()
            }
            return results
        }
    }

    /// Evaluates `chunk` (of one session) on one connection: the groups of one endpoint in
    /// combined statements (``NoticeProbe/combinedStatements(asking:size:membersPerStatement:dialect:)``),
    /// all of them sent together.
    private nonisolated func evaluate(chunk: [Evaluation]) async -> [(Evaluation, Result<Set<[SQLValue]>, any Error>)] {
        let dialect = self.database.dialect
        let perStatement = self.settings.evaluationsPerStatement
        var byEndpoint: [String: [Int]] = [:]
        for (index, evaluation) in chunk.enumerated() { byEndpoint[evaluation.group.endpoint, default: []].append(index) }
        let endpoints = Array(byEndpoint.values)
        do {
            let answers = try await self.database.withSession(self.work(for: chunk[0].probe)) { session in
                try await session.run { connection in
                    var statements: [BoundStatement] = []
                    var owners: [[Int]] = []
                    for indexes in endpoints {
                        let members = indexes.map { (probe: chunk[$0].probe, keys: Array(chunk[$0].keys)) }
                        let combined = try NoticeProbe.combinedStatements(
                            asking: members, size: 512, membersPerStatement: perStatement, dialect: dialect)
                        statements.append(contentsOf: combined)
                        owners.append(contentsOf: Array(repeating: indexes, count: combined.count))
                    }
                    var answers = Array(repeating: Set<[SQLValue]>(), count: chunk.count)
                    for (result, indexes) in zip(try connection.queryAll(statements), owners) {
                        for row in result.rows {
                            guard case .integer(let member)? = row.first, indexes.indices.contains(Int(member)) else {
                                throw DatabaseError(.unsupported, message: "a combined notice statement answered an unknown member")
                            }
                            answers[indexes[Int(member)]].insert(Array(row.dropFirst()))
                        }
                    }
                    return (answers, statements.count)
                }
            }
            self.metrics?.evaluationQueries.increment(by: Int64(answers.1))
            return zip(chunk, answers.0).map { ($0, .success($1)) }
        } catch {
            return chunk.map { ($0, .failure(error)) }
        }
    }

    // MARK: Ticks

    private func tick() {
        let now = ContinuousClock.now
        for group in self.groups.values {
            for subscriber in group.subscribers.values {
                subscriber.tick(now: now, heartbeat: self.settings.heartbeat, slowLimit: self.settings.slowSubscriberLimit)
            }
        }
    }

    // MARK: Database work

    private nonisolated func work(for probe: NoticeProbe) -> DatabaseWork {
        DatabaseWork(
            readOnly: true, statementTimeout: probe.statementTimeout, transaction: .always(readOnly: true), session: probe.session)
    }

    /// Runs `body` with the change log of a connection of the primary.
    private nonisolated func readLog<T: Sendable>(_ body: @escaping @Sendable (any ChangeTracking) throws -> T) async throws -> T {
        try await self.database.withSession(DatabaseWork(readOnly: true)) { session in
            try await session.run { connection in
                guard let log = connection as? any ChangeTracking else {
                    throw DatabaseError(.unsupported, message: "this database keeps no change log")
                }
                return try body(log)
            }
        }
    }
}
