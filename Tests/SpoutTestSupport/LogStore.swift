import Logging
import Synchronization

/// Log entries captured in memory (never through the global logging system).
public final class LogStore: Sendable {
    public struct Entry: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]
    }

    private let entries = Mutex<[Entry]>([])

    public init() {}

    public var all: [Entry] { self.entries.withLock { $0 } }

    public func append(_ entry: Entry) {
        self.entries.withLock { $0.append(entry) }
    }

    /// Access-log entries of the request with `id`.
    public func requests(withID id: String) -> [Entry] {
        self.all.filter { $0.metadata["request.id"] == id }
    }
}

public struct RecordingLogHandler: LogHandler {
    public let store: LogStore
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level

    public init(store: LogStore, logLevel: Logger.Level = .info) {
        self.store = store
        self.logLevel = logLevel
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = self.metadata
        for (key, value) in event.metadata ?? [:] { merged[key] = value }
        self.store.append(
            LogStore.Entry(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" })
        )
    }
}
