#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file, or bytes in memory, one fixed-size block at a time, and tracks the 1-based
/// line and column of the next byte.
///
/// Memory stays constant (one block plus the few bytes of lookahead kept across a refill),
/// whatever the size of the file.
///
/// A struct, so that the per-byte calls of a parser that owns it run without the dynamic
/// exclusivity checks of class properties. It owns a file descriptor and a buffer: exactly one
/// copy must call ``release()`` once, when it is no longer used (``MySQLDumpParser`` does so
/// in its `deinit`).
struct BlockReader {
    /// The path given at creation, for error messages.
    let path: String
    /// The size of the input in bytes (of the file when it was opened).
    let totalBytes: Int64
    /// Bytes consumed through ``advance()`` so far.
    private(set) var consumedBytes: Int64 = 0
    /// Line of the next byte (1-based).
    private(set) var line = 1
    /// Column of the next byte (1-based, in bytes).
    private(set) var column = 1

    private var descriptor: Int32
    private let buffer: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    /// Index of the next unconsumed byte in `buffer`.
    private var start = 0
    /// One past the last valid byte in `buffer`.
    private var end = 0
    private var atEndOfFile = false

    /// Opens `path` for reading in blocks of `blockSize` bytes (at least 16).
    init(path: String, blockSize: Int) throws {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else {
            let code: DataLoadError.Code = errno == ENOENT ? .missingFile : .io
            throw DataLoadError(code, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let message = String(cString: strerror(errno))
            _ = closeFileDescriptor(descriptor)
            throw DataLoadError(.io, "cannot read \(path): \(message)")
        }
        self.path = path
        self.descriptor = descriptor
        self.totalBytes = Int64(status.st_size)
        self.capacity = max(blockSize, 16)
        self.buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: self.capacity)
    }

    /// Reads `bytes` from memory; `name` stands for the file in error messages.
    init(bytes: [UInt8], name: String) {
        self.path = name
        self.descriptor = -1
        self.totalBytes = Int64(bytes.count)
        self.capacity = max(bytes.count, 16)
        self.buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: self.capacity)
        bytes.withUnsafeBufferPointer { source in
            if let base = source.baseAddress {
                self.buffer.update(from: base, count: source.count)
            }
        }
        self.end = bytes.count
        self.atEndOfFile = true
    }

    /// Closes the file and frees the buffer; the reader must not be used afterwards.
    mutating func release() {
        self.close()
        self.buffer.deallocate()
    }

    /// Closes the file; later reads see the end of the input. Idempotent.
    mutating func close() {
        if self.descriptor >= 0 {
            _ = closeFileDescriptor(self.descriptor)
            self.descriptor = -1
        }
        self.atEndOfFile = true
    }

    /// The position of the next byte.
    var position: SourcePosition { SourcePosition(line: self.line, column: self.column) }

    /// The next byte without consuming it, or nil at the end of the input.
    @inline(__always)
    mutating func peek() throws -> UInt8? {
        if self.start < self.end { return self.buffer[self.start] }
        return try self.peekSlow(ahead: 0)
    }

    /// The byte `ahead` positions after the next one (0 is the next byte), or nil when the
    /// input ends before it. `ahead` must be smaller than the block size.
    @inline(__always)
    mutating func peek(ahead: Int) throws -> UInt8? {
        if self.start + ahead < self.end { return self.buffer[self.start + ahead] }
        return try self.peekSlow(ahead: ahead)
    }

    /// Consumes the next byte; call only after ``peek()`` returned a byte.
    @inline(__always)
    mutating func advance() {
        let byte = self.buffer[self.start]
        self.start += 1
        self.consumedBytes += 1
        if byte == UInt8(ascii: "\n") {
            self.line += 1
            self.column = 1
        } else {
            self.column += 1
        }
    }

    private mutating func peekSlow(ahead: Int) throws -> UInt8? {
        precondition(ahead < self.capacity, "lookahead larger than the block size")
        while self.start + ahead >= self.end {
            if self.atEndOfFile { return nil }
            try self.refill()
        }
        return self.buffer[self.start + ahead]
    }

    /// Moves the unconsumed bytes to the front and reads more after them.
    private mutating func refill() throws {
        let remaining = self.end - self.start
        if remaining > 0 && self.start > 0 {
            self.buffer.update(from: self.buffer + self.start, count: remaining)
        }
        self.start = 0
        self.end = remaining
        while true {
            let count = read(self.descriptor, self.buffer + self.end, self.capacity - self.end)
            if count > 0 {
                self.end += count
                return
            }
            if count == 0 {
                self.atEndOfFile = true
                return
            }
            if errno == EINTR { continue }
            throw DataLoadError(.io, "cannot read \(self.path): \(String(cString: strerror(errno)))")
        }
    }
}

/// `close(2)`, under a name that does not clash with ``BlockReader/close()``.
@inline(__always)
private func closeFileDescriptor(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}
