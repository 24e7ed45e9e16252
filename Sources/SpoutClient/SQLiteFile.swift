import CSQLite3
import Dispatch
import Foundation

/// One SQLite file of the client (a sync store, a write queue), its `sqlite3` handle confined to
/// one serial dispatch queue.
///
/// Every use of the handle goes through ``run(_:)``, which runs its closure on the queue and
/// suspends the caller meanwhile: the caller's task never blocks a thread of the cooperative
/// pool on SQLite's file locks or `fsync`. The ``Connection`` a closure gets is valid only
/// during that closure; do not store or escape it.
///
/// `@unchecked Sendable`: its one mutable part, ``Connection``, is only touched on `queue`
/// (through ``run(_:)``), so never by two threads at once; SQLite's own mutexes are off
/// (`SQLITE_OPEN_NOMUTEX`).
final class SQLiteFile: @unchecked Sendable {
    /// The file's path.
    let path: String
    private let queue: DispatchQueue
    private let connection: Connection

    /// Opens (creating it and its folder if missing) the file at `path`, in WAL mode with a
    /// busy timeout of five seconds (another instance of the app's store on the same file
    /// waits rather than fails), and runs `schema` on it.
    static func open(path: String, schema: String) async throws -> SQLiteFile {
        let queue = DispatchQueue(label: "SpoutClient.SQLiteFile")
        let connection: Connection = try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result {
                    try FileManager.default.createDirectory(
                        at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
                    let connection = try Connection(path: path)
                    try connection.execute("PRAGMA journal_mode=WAL")
                    try connection.execute(schema)
                    return connection
                })
            }
        }
        return SQLiteFile(path: path, queue: queue, connection: connection)
    }

    private init(path: String, queue: DispatchQueue, connection: Connection) {
        self.path = path
        self.queue = queue
        self.connection = connection
    }

    /// Runs `body` on the file's queue with its connection.
    func run<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            self.queue.async {
                continuation.resume(with: Result { try body(self.connection) })
            }
        }
    }

    /// Runs `body` on the file's queue inside `BEGIN IMMEDIATE` … `COMMIT`; a throw rolls back.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await self.run { connection in
            try connection.execute("BEGIN IMMEDIATE")
            do {
                let result = try body(connection)
                try connection.execute("COMMIT")
                return result
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// An open `sqlite3` handle. Not thread-safe: used on one thread at a time (``SQLiteFile``'s
    /// queue). Closed when released.
    final class Connection {
        private let handle: OpaquePointer

        init(path: String) throws {
            var opened: OpaquePointer?
            let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
            let result = sqlite3_open_v2(path, &opened, flags, nil)
            guard result == SQLITE_OK, let handle = opened else {
                let reason = opened.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
                sqlite3_close_v2(opened)
                throw SpoutClientError.storeFailed("cannot open \(path): \(reason)")
            }
            self.handle = handle
            sqlite3_busy_timeout(handle, 5_000)
        }

        deinit {
            sqlite3_close_v2(self.handle)
        }

        /// Runs `sql` (one or more statements, no parameters).
        func execute(_ sql: String) throws {
            try self.check(sqlite3_exec(self.handle, sql, nil, nil, nil), sql)
        }

        /// Runs one statement with `arguments` bound in order (`?` placeholders) and calls
        /// `row` for each result row.
        func query(_ sql: String, _ arguments: [Value] = [], row: (Row) throws -> Void = { _ in }) throws {
            var prepared: OpaquePointer?
            try self.check(sqlite3_prepare_v2(self.handle, sql, -1, &prepared, nil), sql)
            guard let statement = prepared else { return }
            defer { sqlite3_finalize(statement) }
            for (offset, argument) in arguments.enumerated() {
                let index = Int32(offset + 1)
                let result: Int32
                switch argument {
                case .null: result = sqlite3_bind_null(statement, index)
                case .integer(let value): result = sqlite3_bind_int64(statement, index, value)
                case .real(let value): result = sqlite3_bind_double(statement, index, value)
                case .text(let value): result = sqlite3_bind_text(statement, index, value, -1, spout_sqlite_transient())
                case .blob(let bytes):
                    result = bytes.withUnsafeBytes { buffer in
                        sqlite3_bind_blob64(statement, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), UInt64(buffer.count), spout_sqlite_transient())
                    }
                }
                try self.check(result, sql)
            }
            while true {
                let step = sqlite3_step(statement)
                if step == SQLITE_DONE { return }
                guard step == SQLITE_ROW else { return try self.check(step, sql) }
                try row(Row(statement: statement))
            }
        }

        private func check(_ result: Int32, _ sql: String) throws {
            guard result != SQLITE_OK && result != SQLITE_ROW && result != SQLITE_DONE else { return }
            let statement = sql.split(separator: " ").prefix(3).joined(separator: " ")
            throw SpoutClientError.storeFailed("\(String(cString: sqlite3_errmsg(self.handle))) (\(statement) …)")
        }
    }

    /// A value bound to a statement.
    enum Value {
        case null
        case integer(Int64)
        case real(Double)
        case text(String)
        case blob([UInt8])
    }

    /// The current row of a stepped statement; valid only inside the `row` closure.
    struct Row {
        fileprivate let statement: OpaquePointer

        func isNull(_ column: Int32) -> Bool { sqlite3_column_type(self.statement, column) == SQLITE_NULL }
        func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(self.statement, column) }
        func real(_ column: Int32) -> Double { sqlite3_column_double(self.statement, column) }

        func text(_ column: Int32) -> String? {
            guard let pointer = sqlite3_column_text(self.statement, column) else { return nil }
            return String(cString: pointer)
        }

        func blob(_ column: Int32) -> [UInt8] {
            // sqlite3_column_bytes must follow sqlite3_column_blob (SQLite's documented order).
            guard let pointer = sqlite3_column_blob(self.statement, column) else { return [] }
            let count = Int(sqlite3_column_bytes(self.statement, column))
            return Array(UnsafeRawBufferPointer(start: pointer, count: count))
        }
    }
}
