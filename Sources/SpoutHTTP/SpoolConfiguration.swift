#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where and how much a stream may spool when its client reads slower than the database
/// answers (see ``StreamingResponseSink``, docs/reliability.md).
///
/// A stream whose client keeps up never spools. One that falls behind first queues up to
/// ``memoryBytesPerStream`` in memory, then appends to a temporary file, so the producer (and
/// its database connection and transaction) finishes at the database's speed. When a cap
/// below would be passed, or the disk refuses a write, the stream holds its connection and
/// waits for the client instead, as without a spool: never a short body, never an error.
public struct SpoolConfiguration: Sendable, Hashable {
    /// Whether streams spool at all; false: every stream waits for its client (backpressure).
    public var isEnabled: Bool
    /// The directory spool files are created in; nil: `TMPDIR`, else `/tmp`. Files are created
    /// unlinked (`O_TMPFILE`, or unlinked right after creation where that is unsupported), so
    /// a crash leaves nothing behind.
    public var directory: String?
    /// Bytes a stream may queue in memory before it spools to disk.
    public var memoryBytesPerStream: Int
    /// Bytes one stream may have in its spool file.
    public var maximumBytesPerStream: Int
    /// Bytes all streams together may have in spool files.
    public var maximumBytes: Int

    public init(
        isEnabled: Bool = true, directory: String? = nil, memoryBytesPerStream: Int = 512 * 1024,
        maximumBytesPerStream: Int = 1 << 30, maximumBytes: Int = 4 << 30
    ) {
        self.isEnabled = isEnabled
        self.directory = directory
        self.memoryBytesPerStream = max(0, memoryBytesPerStream)
        self.maximumBytesPerStream = max(0, maximumBytesPerStream)
        self.maximumBytes = max(0, maximumBytes)
    }

    /// ``directory``, or the system's temporary directory.
    var resolvedDirectory: String {
        if let directory, !directory.isEmpty { return directory }
        if let temporary = getenv("TMPDIR").map({ String(cString: $0) }), !temporary.isEmpty { return temporary }
        return "/tmp"
    }
}
