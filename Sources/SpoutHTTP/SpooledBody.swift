#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes
import NIOCore
import SpoutCore

/// A body written before any of it may be sent (a bulk write's keys, which must not reach
/// the client before its transaction commits), whatever its size, in constant memory: it is
/// appended to an unnamed temporary file (``SpoolFile``), then sent by the producer of
/// ``response(status:headers:contentType:prefix:suffix:)`` as a stream, with backpressure.
///
/// Contract:
/// - One writer appends, through ``ByteSink``'s ``write(_:)`` and ``finish(_:)`` (which ends
///   the body; nothing may be written after it), on a thread that may block on the disk
///   (a database thread), never an event loop. Memory holds at most ``bufferSize`` bytes.
/// - After ``finish(_:)``, ``bytes()`` reads the body back whole (for a small one) and the
///   response sends it; neither writes.
/// - The file has no name: nothing is left behind when the last reference goes.
///
/// `@unchecked Sendable`: the buffer and the count change only in the writer's calls, which
/// all happen before ``finish(_:)`` returns; the body is handed on (to a response, to a
/// feeding thread) only after that, and is then only read.
public final class SpooledBody: ByteSink, @unchecked Sendable {
    /// Bytes gathered before they are written to the file.
    public static let bufferSize = 64 * 1024

    private let file: SpoolFile
    private var buffer: [UInt8] = []
    /// Bytes in the file.
    private var written = 0
    private var isFinished = false

    /// A new, empty body in `directory` (nil: `TMPDIR`, else `/tmp`, as
    /// ``SpoolConfiguration/directory`` says).
    public init(directory: String?) throws {
        self.file = try SpoolFile.create(in: SpoolConfiguration(directory: directory).resolvedDirectory)
        self.buffer.reserveCapacity(Self.bufferSize)
    }

    /// The body's length so far.
    public var count: Int { self.written + self.buffer.count }

    public func write(_ chunk: UnsafeRawBufferPointer) throws {
        precondition(!self.isFinished, "a finished body takes no more bytes")
        if self.buffer.count + chunk.count > Self.bufferSize { try self.flush() }
        if chunk.count >= Self.bufferSize {
            try self.writeToFile(chunk)
        } else {
            self.buffer.append(contentsOf: chunk)
        }
    }

    public func finish(_ last: UnsafeRawBufferPointer) throws {
        try self.write(last)
        try self.flush()
        self.isFinished = true
    }

    /// The whole body, read back from the file. Blocks on the disk.
    public func bytes() throws -> [UInt8] {
        return try self.read(at: 0, count: self.written)
    }

    /// `count` bytes of the finished body from `offset` (both within ``count``). Blocks on the
    /// disk.
    public func read(at offset: Int, count: Int) throws -> [UInt8] {
        precondition(self.isFinished, "read a body once it is finished")
        precondition(offset >= 0 && count >= 0 && offset + count <= self.written, "read within the body")
        guard count > 0 else { return [] }
        return Array(try self.file.read(count: count, at: offset, allocator: ByteBufferAllocator()).readableBytesView)
    }

    /// A response whose body is `prefix`, this body and `suffix`, streamed (chunked, compressed
    /// as the request accepts) by a thread of its own that waits for the client
    /// (``StreamingResponseSink``); a body of one chunk goes whole. `rows`: what the access log
    /// counts. Call once it is finished.
    public func response(
        status: HTTPResponse.Status = .ok, headers: HTTPFields = HTTPFields(), contentType: String, prefix: [UInt8] = [],
        suffix: [UInt8] = [], rows: Int = 0
    ) -> Response {
        precondition(self.isFinished, "send a body once it is finished")
        var headers = headers
        headers.replaceOrAdd(.contentType, contentType)
        return Response(status: status, headers: headers, body: .produced(SpooledBodyProducer(body: self, prefix: prefix, suffix: suffix, rows: rows)))
    }

    private func flush() throws {
        guard !self.buffer.isEmpty else { return }
        try self.buffer.withUnsafeBytes { try self.writeToFile($0) }
        self.buffer.removeAll(keepingCapacity: true)
    }

    private func writeToFile(_ bytes: UnsafeRawBufferPointer) throws {
        if let code = DescriptorWrite.all(bytes, to: self.file.descriptor, at: self.written) {
            throw SpoolFile.Failure(operation: "write a spooled body", code: code)
        }
        self.written += bytes.count
    }

    /// Hands the body to `sink` in chunks of ``ChunkedOutput/chunkSize``, `prefix` first and
    /// `suffix` last; blocks while the client does not read. Returns the bytes sent.
    fileprivate func feed(_ sink: StreamingResponseSink, prefix: [UInt8], suffix: [UInt8]) throws -> Int {
        var chunk = prefix
        var offset = 0
        while offset < self.written {
            let count = min(ChunkedOutput.chunkSize, self.written - offset)
            let read = try self.file.read(count: count, at: offset, allocator: ByteBufferAllocator())
            chunk.append(contentsOf: read.readableBytesView)
            offset += count
            if offset < self.written {
                try sink.write(chunk)
                chunk.removeAll(keepingCapacity: true)
            }
        }
        chunk += suffix
        try sink.finish(chunk)
        return prefix.count + self.written + suffix.count
    }
}

/// Sends a ``SpooledBody`` as a stream: the sink's writes may block, so they run on a thread
/// of their own (``SpoutThread``), which ends once the client has taken the body (or the
/// spool has) or gone away.
private struct SpooledBodyProducer: ResponseProducer {
    let body: SpooledBody
    let prefix: [UInt8]
    let suffix: [UInt8]
    let rows: Int

    func produce(status: HTTPResponse.Status, headers: HTTPFields, through exchange: ResponseExchange) async throws {
        let sink = exchange.startStream(status: status, headers: headers)
        let result = await SpoutThread.result(named: "spout-spooled") {
            try self.body.feed(sink, prefix: self.prefix, suffix: self.suffix)
        }
        exchange.finishStream(sink, result: result.map { _ in self.rows })
    }
}
