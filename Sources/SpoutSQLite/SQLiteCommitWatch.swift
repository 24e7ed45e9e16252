#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CSQLite3
import SpoutCore

/// The commits of one SQLite database file in WAL mode, read from the WAL-index header its
/// writers publish each commit in (https://sqlite.org/walformat.html): a
/// ``SpoutCore/CommitWatch``. Every commit, by any connection of any process, rewrites the
/// header before statements can see it, so a header that reads the same means nothing
/// committed since.
///
/// The header is read where SQLite maps it for this process (``spout_sqlite_wal_index``, the
/// VFS's own `xShmMap`), through a connection kept open for the watch's whole life: Spout opens
/// no descriptor of the `-shm` file, whose closing would drop every POSIX lock the process
/// holds on it, SQLite's included. While that connection is open it holds a shared lock on
/// the database file, so no other connection, in this process or another, is the last to
/// close, the only one that deletes or empties the `-shm` file. ``isCurrent()`` checks that
/// the file at the `-shm` path is still the one there when the watch began (an operator could
/// delete it).
///
/// `@unchecked Sendable`: the connection is touched only by `init` and `deinit`; the header
/// is memory that other connections write, read only through the shim's fenced copies
/// (``mark()``), as SQLite's own readers read it.
final class SQLiteCommitWatch: CommitWatch, @unchecked Sendable {
    private let keeper: OpaquePointer
    private let region: UnsafeRawPointer
    private let sharedMemoryPath: String
    private let identity: FileIdentity

    /// Opens a connection to the database file at `path` and has it read, which maps its
    /// WAL-index. Nil when the database is not in WAL mode, its WAL-index header has another
    /// layout, or any step fails: sync reads then ask the database each time. Blocks.
    init?(path: String) {
        var opened: OpaquePointer?
        guard sqlite3_open_v2(path, &opened, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let keeper = opened else {
            sqlite3_close_v2(opened)
            return nil
        }
        sqlite3_busy_timeout(keeper, 5000)
        let sharedMemoryPath = path + "-shm"
        // The layout is checked by a field no commit changes: a writer publishing now must not
        // cost the database its watch for good (``mark()`` is nil while one publishes).
        guard Self.isInWALMode(keeper), let region = spout_sqlite_wal_index(keeper), spout_sqlite_wal_index_is_known(region) == 1,
            let identity = FileIdentity(path: sharedMemoryPath)
        else {
            sqlite3_close_v2(keeper)
            return nil
        }
        self.keeper = keeper
        self.region = region
        self.sharedMemoryPath = sharedMemoryPath
        self.identity = identity
    }

    deinit {
        sqlite3_close_v2(self.keeper)
    }

    func mark() -> CommitMark? {
        var words = SIMD8<UInt64>()
        let consistent = withUnsafeMutableBytes(of: &words) { bytes in
            spout_sqlite_wal_index_header(self.region, bytes.baseAddress!.assumingMemoryBound(to: UInt64.self))
        }
        return consistent == 1 ? CommitMark(words: words) : nil
    }

    func isCurrent() -> Bool {
        FileIdentity(path: self.sharedMemoryPath) == self.identity
    }

    /// Whether the database is in WAL mode, asked by a statement that reads it (and so opens
    /// its WAL and maps its WAL-index).
    private static func isInWALMode(_ keeper: OpaquePointer) -> Bool {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(keeper, "PRAGMA journal_mode", -1, &statement, nil) == SQLITE_OK, let statement else { return false }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return false }
        return String(cString: text).lowercased() == "wal"
    }

    /// A file's device and inode, by `stat` (which opens no descriptor).
    private struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64

        init?(path: String) {
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            self.device = UInt64(status.st_dev)
            self.inode = UInt64(status.st_ino)
        }
    }
}
