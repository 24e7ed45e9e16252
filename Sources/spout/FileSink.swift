#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SpoutCore

/// A sink that writes each chunk to a file descriptor as it comes (blocking writes are the
/// backpressure).
final class FileSink: ByteSink {
    private let descriptor: Int32
    private let ownsDescriptor: Bool

    /// Standard output, or the file at `path` (created or truncated).
    init(path: String?) throws {
        if let path {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            guard descriptor >= 0 else { throw FileSinkError(message: "cannot open \(path) for writing: \(FileSinkError.reason(errno))") }
            self.descriptor = descriptor
            self.ownsDescriptor = true
        } else {
            self.descriptor = STDOUT_FILENO
            self.ownsDescriptor = false
        }
    }

    deinit {
        if self.ownsDescriptor { close(self.descriptor) }
    }

    func write(_ chunk: UnsafeRawBufferPointer) throws {
        if let code = DescriptorWrite.all(chunk, to: self.descriptor) {
            throw FileSinkError(message: "writing the output failed: \(FileSinkError.reason(code))")
        }
    }

    func finish(_ last: UnsafeRawBufferPointer) throws {
        try self.write(last)
    }
}

/// A failure to open or write the output: a runtime error, printed without the usage.
struct FileSinkError: Error, CustomStringConvertible {
    var message: String

    var description: String { self.message }

    /// The system's text for an `errno` value.
    static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }
}
