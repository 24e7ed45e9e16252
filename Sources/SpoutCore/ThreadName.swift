import Foundation

/// Names the calling thread for the operating system: what `top -H`, `ps -L` and `perf` show.
///
/// `Thread.name` set before `start()` stays inside Foundation on Linux, so a thread started
/// from an event loop kept the loop's name (`NIO-ELT-…`) and its work was counted as the
/// loop's in profiles. Linux keeps 15 bytes of a name: `name` is cut there. Written through
/// `/proc/thread-self/comm` (the GNU call is not visible from Swift's Glibc module); a system
/// without it keeps the old name. Elsewhere, nothing happens.
public enum ThreadName {
    public static func setCurrent(_ name: String) {
        #if os(Linux)
        let descriptor = open("/proc/thread-self/comm", O_WRONLY)
        guard descriptor >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        #endif
    }
}
