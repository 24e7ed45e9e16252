import CZlib
import CZstd

/// Compresses one body: a stream as its producer writes it, or a body sent whole in one
/// ``finish(_:)`` (``ContentCoding/encodeWhole(_:)``).
///
/// Contract: one thread at a time calls ``encode(_:flush:)`` for each chunk and ``finish(_:)``
/// once; each returns the compressed bytes the library let go of so far (possibly none). After
/// an `encode` with `flush`, the bytes returned so far decode to every byte given so far; the
/// ``CompressionStage`` flushes whenever it runs out of input, so compression never holds a row
/// back while the producer waits for the database.
protocol StreamEncoder: AnyObject {
    func encode(_ bytes: [UInt8], flush: Bool) throws -> [UInt8]
    /// The last bytes and the coding's end (gzip's trailer, zstd's last block).
    func finish(_ bytes: [UInt8]) throws -> [UInt8]
}

/// Why an encoder failed (a library error; the stream is then cut short).
struct StreamEncoderFailure: Error, CustomStringConvertible {
    var description: String
}

/// gzip or deflate (zlib's format) through zlib's `deflate`. Not `Sendable`: an encoder
/// belongs to one body's producer.
final class DeflateStreamEncoder: StreamEncoder {
    /// zlib keeps a pointer back to the `z_stream` and checks it on every call: the stream
    /// lives at one address for the encoder's life.
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private var output: [UInt8]

    /// An encoder at `level`; `gzip` frames the data as gzip, otherwise as zlib (HTTP's
    /// `deflate`). `size`, when the whole input is known, shrinks zlib's window and tables to
    /// it (matches reach no further than the input's start anyway), so a small body costs
    /// kilobytes of state rather than zlib's 256 KiB.
    init(level: Int32, gzip: Bool, size: Int? = nil) throws {
        var windowBits: Int32 = 15
        var memoryLevel: Int32 = 8
        if let size {
            // A match reaches back at most the window less zlib's 262-byte lookahead; the
            // smallest window is 2⁹, and the hash table has 2^(memoryLevel + 7) entries.
            while windowBits > 9 && (1 << (windowBits - 1)) - 262 >= size { windowBits -= 1 }
            memoryLevel = max(1, min(8, windowBits - 7))
        }
        self.output = [UInt8](repeating: 0, count: size.map { min(64 * 1024, $0 + $0 / 8 + 64) } ?? 64 * 1024)
        self.stream.initialize(to: z_stream())
        let status = spout_deflate_init(self.stream, level, windowBits, memoryLevel, gzip ? 1 : 0)
        guard status == Z_OK else {
            self.stream.deallocate()
            throw StreamEncoderFailure(description: "deflateInit2 failed (\(status))")
        }
    }

    deinit {
        deflateEnd(self.stream)
        self.stream.deallocate()
    }

    func encode(_ bytes: [UInt8], flush: Bool) throws -> [UInt8] {
        try self.deflate(bytes, flush: flush ? Z_SYNC_FLUSH : Z_NO_FLUSH)
    }

    func finish(_ bytes: [UInt8]) throws -> [UInt8] {
        try self.deflate(bytes, flush: Z_FINISH)
    }

    private func deflate(_ bytes: [UInt8], flush: Int32) throws -> [UInt8] {
        var result: [UInt8] = []
        try bytes.withUnsafeBufferPointer { input in
            // zlib declares its input mutable but only reads it.
            self.stream.pointee.next_in = input.baseAddress.map { UnsafeMutablePointer(mutating: $0) }
            self.stream.pointee.avail_in = UInt32(input.count)
            while true {
                let (status, produced, full) = self.output.withUnsafeMutableBufferPointer { output in
                    self.stream.pointee.next_out = output.baseAddress
                    self.stream.pointee.avail_out = UInt32(output.count)
                    let status = CZlib.deflate(self.stream, flush)
                    return (status, output.count - Int(self.stream.pointee.avail_out), self.stream.pointee.avail_out == 0)
                }
                guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else {
                    throw StreamEncoderFailure(description: "deflate failed (\(status))")
                }
                result.append(contentsOf: self.output[0..<produced])
                // Done once zlib had room to spare (all input taken, flushed if asked), or, finishing,
                // once it says the stream ended.
                if flush == Z_FINISH ? status == Z_STREAM_END : !full { break }
            }
        }
        self.stream.pointee.next_in = nil
        return result
    }
}

/// zstd through libzstd's streaming API.
final class ZstdStreamEncoder: StreamEncoder {
    private let context: OpaquePointer
    private var output: [UInt8]

    /// An encoder at `level`. `size`, when the whole input is known, is pledged to libzstd,
    /// which then sizes its tables to it (a small body costs little state) and writes the
    /// size into the frame.
    init(level: Int32, size: Int? = nil) throws {
        guard let context = ZSTD_createCCtx() else { throw StreamEncoderFailure(description: "ZSTD_createCCtx failed") }
        self.context = context
        self.output = [UInt8](repeating: 0, count: size.map { min(ZSTD_CStreamOutSize(), ZSTD_compressBound($0)) } ?? ZSTD_CStreamOutSize())
        var status = ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level)
        if ZSTD_isError(status) == 0, let size {
            status = ZSTD_CCtx_setPledgedSrcSize(context, UInt64(size))
        }
        guard ZSTD_isError(status) == 0 else {
            ZSTD_freeCCtx(context)
            throw StreamEncoderFailure(description: "zstd level \(level): \(String(cString: ZSTD_getErrorName(status)))")
        }
    }

    deinit {
        ZSTD_freeCCtx(self.context)
    }

    func encode(_ bytes: [UInt8], flush: Bool) throws -> [UInt8] {
        try self.compress(bytes, directive: flush ? ZSTD_e_flush : ZSTD_e_continue)
    }

    func finish(_ bytes: [UInt8]) throws -> [UInt8] {
        try self.compress(bytes, directive: ZSTD_e_end)
    }

    private func compress(_ bytes: [UInt8], directive: ZSTD_EndDirective) throws -> [UInt8] {
        var result: [UInt8] = []
        try bytes.withUnsafeBytes { input in
            var inBuffer = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
            while true {
                let (remaining, produced) = self.output.withUnsafeMutableBytes { output in
                    var outBuffer = ZSTD_outBuffer(dst: output.baseAddress, size: output.count, pos: 0)
                    let remaining = ZSTD_compressStream2(self.context, &outBuffer, &inBuffer, directive)
                    return (remaining, outBuffer.pos)
                }
                guard ZSTD_isError(remaining) == 0 else {
                    throw StreamEncoderFailure(description: "zstd: \(String(cString: ZSTD_getErrorName(remaining)))")
                }
                result.append(contentsOf: self.output[0..<produced])
                // With flush or end, zero left means all input is taken and flushed; without,
                // the library returns once it took all input or filled the output.
                if directive == ZSTD_e_continue ? inBuffer.pos == inBuffer.size && produced < self.output.count : remaining == 0 {
                    break
                }
            }
        }
        return result
    }
}
