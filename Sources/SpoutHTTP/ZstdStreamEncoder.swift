import CZstd

/// zstd through libzstd's streaming API.
final class ZstdStreamEncoder: StreamEncoder {
    private let context: OpaquePointer
    private var output: [UInt8]

    /// log2 of the match-finder's hash table for a stream (a body of unknown size): 64 Ki
    /// entries, 256 KiB. Level 1 picks 2¹³ entries for large inputs; on `/salaries` (249 MB of
    /// JSON) 2¹⁶ makes the body 4.2 % smaller (30.8 against 32.1 MB) in the same CPU time (a
    /// table that still fits the core's L2; 2¹⁷ saved 1 % more for twice the memory).
    static let streamHashLog: Int32 = 16

    /// An encoder at `level`. `size`, when the whole input is known, is pledged to libzstd,
    /// which then sizes its tables to it (a small body costs little state) and writes the
    /// size into the frame; without it (a stream) the hash table is ``streamHashLog``.
    init(level: Int32, size: Int? = nil) throws {
        guard let context = ZSTD_createCCtx() else { throw StreamEncoderFailure(description: "ZSTD_createCCtx failed") }
        self.context = context
        self.output = [UInt8](repeating: 0, count: size.map { min(ZSTD_CStreamOutSize(), ZSTD_compressBound($0)) } ?? ZSTD_CStreamOutSize())
        var status = ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, level)
        if ZSTD_isError(status) == 0 {
            if let size {
                status = ZSTD_CCtx_setPledgedSrcSize(context, UInt64(size))
            } else {
                status = ZSTD_CCtx_setParameter(context, ZSTD_c_hashLog, Self.streamHashLog)
            }
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
