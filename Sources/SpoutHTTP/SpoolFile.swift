#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import SpoutCore

/// A temporary file with no name: created unlinked (Linux's `O_TMPFILE`), or unlinked right
/// after `mkstemp` where the file system does not support that, so no crash or `kill -9`
/// leaves it behind. Its descriptor closes when the last reference goes.
///
/// Contract: one writer appends (``write(_:at:)``) while readers read regions already
/// written (``read(count:at:)``); `pwrite`/`pread` at offsets keep them apart. Every call
/// blocks on the disk: never call one on an event loop.
final class SpoolFile: Sendable {
    /// The spool file could not be created or written (the `errno` it failed with).
    struct Failure: Error, CustomStringConvertible {
        var operation: String
        var code: CInt
        var description: String { "\(self.operation): \(String(cString: strerror(self.code)))" }
    }

    let descriptor: CInt

    private init(descriptor: CInt) {
        self.descriptor = descriptor
    }

    deinit {
        close(self.descriptor)
    }

    /// A new, empty, unnamed file in `directory`.
    static func create(in directory: String) throws(Failure) -> SpoolFile {
        #if os(Linux)
        // O_TMPFILE is `__O_TMPFILE | O_DIRECTORY`; Swift does not import the compound macro.
        let temporaryFile: CInt = 0o20000000 | O_DIRECTORY
        let descriptor = open(directory, temporaryFile | O_RDWR | O_CLOEXEC, 0o600)
        if descriptor >= 0 { return SpoolFile(descriptor: descriptor) }
        // EOPNOTSUPP, EISDIR or EINVAL: the file system has no O_TMPFILE. Anything else (no
        // such directory, no permission) fails the same way with mkstemp below.
        #endif
        var template = Array("\(directory)/spout-spool-XXXXXX".utf8CString)
        let named = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard named >= 0 else { throw Failure(operation: "create a spool file in \(directory)", code: errno) }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return SpoolFile(descriptor: named)
    }

    /// Writes all of `chunk`'s readable bytes at `offset`.
    func write(_ chunk: ByteBuffer, at offset: Int) throws(Failure) {
        let failure = chunk.withUnsafeReadableBytes { DescriptorWrite.all($0, to: self.descriptor, at: offset) }
        if let code = failure {
            throw Failure(operation: "write the spool file", code: code)
        }
    }

    /// Reads `count` bytes at `offset` (all written before) into a buffer from `allocator`,
    /// which the channel then writes as it is.
    func read(count: Int, at offset: Int, allocator: ByteBufferAllocator) throws(Failure) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: count)
        while buffer.readableBytes < count {
            let done = buffer.readableBytes
            var failure: Failure?
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - done) { free in
                let result = pread(self.descriptor, free.baseAddress!, count - done, off_t(offset + done))
                if result < 0 {
                    let code = errno
                    if code != EINTR { failure = Failure(operation: "read the spool file", code: code) }
                } else if result == 0 {
                    failure = Failure(operation: "read the spool file (short)", code: EIO)
                }
                return max(result, 0)
            }
            if let failure { throw failure }
        }
        return buffer
    }

    /// Gives the file's blocks back (the reader has caught up with the writer).
    func truncate() {
        _ = ftruncate(self.descriptor, 0)
    }
}
