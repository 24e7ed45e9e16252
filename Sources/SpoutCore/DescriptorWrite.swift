#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing a whole buffer to a file descriptor: the one place that retries a write the kernel
/// cut short or a signal interrupted. Each caller decides what a failure means to it (a spool
/// file fails its stream, a log line is dropped, a dump file stops the load).
public enum DescriptorWrite {
    /// Writes all of `bytes` to `descriptor`, at `offset` in the file when given (`pwrite`,
    /// leaving the file position alone), else at its position (`write`).
    /// - Returns: nil when every byte was written; otherwise the `errno` of the write that
    ///   failed (`EIO` for a write that took nothing, which would otherwise be retried forever),
    ///   with the bytes before it written.
    public static func all(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, at offset: Int? = nil) -> Int32? {
        var done = 0
        while done < bytes.count {
            let start = bytes.baseAddress! + done
            let count = bytes.count - done
            let written = offset.map { pwrite(descriptor, start, count, off_t($0 + done)) } ?? write(descriptor, start, count)
            if written > 0 {
                done += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return written < 0 ? errno : EIO
            }
        }
        return nil
    }

    /// ``all(_:to:at:)`` for the bytes of an array.
    public static func all(_ bytes: [UInt8], to descriptor: Int32, at offset: Int? = nil) -> Int32? {
        bytes.withUnsafeBytes { self.all($0, to: descriptor, at: offset) }
    }
}
