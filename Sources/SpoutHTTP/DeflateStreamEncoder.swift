import CISAL

/// gzip or deflate (zlib's format) through ISA-L's igzip, Intel's deflate compressor: at its
/// level 1 it compresses a JSON stream about four times as fast as zlib's level 1, to a smaller
/// output (`docs/benchmarks.md`, "Compressed streams"), and what it writes is plain deflate
/// that any inflater reads.
/// Not `Sendable`: an encoder belongs to one body's producer.
final class DeflateStreamEncoder: StreamEncoder {
    /// The frame around the deflate data.
    enum Framing {
        /// gzip's header and trailer (CRC-32 and length): HTTP's `gzip`.
        case gzip
        /// zlib's header and trailer (Adler-32): HTTP's `deflate` (RFC 9110 §8.4.1.2).
        case zlib

        var flag: UInt16 {
            switch self {
            case .gzip: UInt16(IGZIP_GZIP)
            case .zlib: UInt16(IGZIP_ZLIB)
            }
        }
    }

    /// The compressor's state (about 80 KiB, so not inline in the object) and the buffer its
    /// level needs; both live as long as the encoder.
    private let stream = UnsafeMutablePointer<isal_zstream>.allocate(capacity: 1)
    private let levelBuffer: UnsafeMutableRawPointer
    private var output = [UInt8](repeating: 0, count: 64 * 1024)

    /// A streaming encoder at ISA-L's `level` in `framing`. The level buffer is the size
    /// level 1 asks for (level 2 also fits it; level 3 would fail its first call).
    init(level: Int32, framing: Framing) {
        let size = Int(spout_isal_level1_buffer_size())
        self.levelBuffer = .allocate(byteCount: size, alignment: 16)
        isal_deflate_init(self.stream)
        // Not every ISA-L's init sets the window (the memory is fresh from the allocator):
        // 0 is its default, 32 KiB.
        self.stream.pointee.hist_bits = 0
        self.stream.pointee.level = UInt32(level)
        self.stream.pointee.level_buf = self.levelBuffer.assumingMemoryBound(to: UInt8.self)
        self.stream.pointee.level_buf_size = UInt32(size)
        self.stream.pointee.gzip_flag = framing.flag
    }

    deinit {
        self.stream.deallocate()
        self.levelBuffer.deallocate()
    }

    func encode(_ bytes: [UInt8], flush: Bool) throws -> [UInt8] {
        try self.deflate(bytes, flush: flush ? SYNC_FLUSH : NO_FLUSH, end: false)
    }

    func finish(_ bytes: [UInt8]) throws -> [UInt8] {
        try self.deflate(bytes, flush: NO_FLUSH, end: true)
    }

    private func deflate(_ bytes: [UInt8], flush: Int32, end: Bool) throws -> [UInt8] {
        var result: [UInt8] = []
        try bytes.withUnsafeBufferPointer { input in
            // ISA-L declares its input mutable but only reads it.
            self.stream.pointee.next_in = input.baseAddress.map { UnsafeMutablePointer(mutating: $0) }
            self.stream.pointee.avail_in = UInt32(input.count)
            self.stream.pointee.flush = UInt16(flush)
            self.stream.pointee.end_of_stream = end ? 1 : 0
            while true {
                let (status, produced, full) = self.output.withUnsafeMutableBufferPointer { output in
                    self.stream.pointee.next_out = output.baseAddress
                    self.stream.pointee.avail_out = UInt32(output.count)
                    let status = isal_deflate(self.stream)
                    return (status, output.count - Int(self.stream.pointee.avail_out), self.stream.pointee.avail_out == 0)
                }
                guard status == COMP_OK else { throw StreamEncoderFailure(description: "isal_deflate failed (\(status))") }
                result.append(contentsOf: self.output[0..<produced])
                // Done, finishing, once the trailer is written; otherwise once all input is taken
                // with room to spare (after a sync flush that means the flush is complete too).
                if end ? self.stream.pointee.internal_state.state == ZSTATE_END : self.stream.pointee.avail_in == 0 && !full { break }
            }
        }
        self.stream.pointee.next_in = nil
        return result
    }

    /// `body` compressed in one call at ISA-L's `level` (0 or 1: the levels its one-shot
    /// compressor runs without a level buffer), with its smallest tables, the cheapest to set
    /// up for a body sent whole.
    static func compressWhole(_ body: [UInt8], level: Int32, framing: Framing) throws -> [UInt8] {
        let stream = UnsafeMutablePointer<isal_zstream>.allocate(capacity: 1)
        defer { stream.deallocate() }
        isal_deflate_stateless_init(stream)
        stream.pointee.hist_bits = 0
        stream.pointee.level = UInt32(level)
        stream.pointee.gzip_flag = framing.flag
        stream.pointee.end_of_stream = 1
        // Incompressible input is stored: 5 bytes per block of at most 65,535, plus the frame.
        let capacity = body.count + (body.count / 65_535 + 1) * 5 + Int(spout_isal_maximum_header_size()) + 32
        var status = COMP_OK
        let compressed = body.withUnsafeBufferPointer { input in
            [UInt8](unsafeUninitializedCapacity: capacity) { output, count in
                stream.pointee.next_in = input.baseAddress.map { UnsafeMutablePointer(mutating: $0) }
                stream.pointee.avail_in = UInt32(input.count)
                stream.pointee.next_out = output.baseAddress
                stream.pointee.avail_out = UInt32(output.count)
                status = isal_deflate_stateless(stream)
                count = status == COMP_OK ? output.count - Int(stream.pointee.avail_out) : 0
            }
        }
        guard status == COMP_OK else { throw StreamEncoderFailure(description: "isal_deflate_stateless failed (\(status))") }
        return compressed
    }
}
