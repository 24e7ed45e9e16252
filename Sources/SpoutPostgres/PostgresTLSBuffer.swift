#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CLibPQ

/// What a TLS connection to PostgreSQL holds between the socket and libpq.
///
/// libpq reads TLS records through OpenSSL into its own buffer, and a read asks for no more than
/// that buffer has free (at least 8 KiB). A record carries up to 16 KiB, so a read can leave
/// the rest of a record decrypted inside OpenSSL, and the socket has nothing more to show for
/// it: code that waits for the socket to turn readable (the reactor's epoll, a `poll`) would
/// wait for bytes it already has. libpq's own blocking waits check for them first; every wait
/// of Spout's for an answer on a libpq socket must too (``hasUnreadBytes(_:)``: the pipelined
/// runs of ``PostgresEventDrivenRun``, by the reactor or by `poll`). PostgreSQL 15 and 16 write
/// records of at most 8 KiB, which always fit; PostgreSQL 17 sends a message larger than its
/// buffer in records of 16 KiB, and proxies that end TLS in front of a server frame records as
/// they like.
enum PostgresTLSBuffer {
    /// OpenSSL's `SSL_pending`, looked up in the process (libpq loaded OpenSSL for its TLS), so
    /// that Spout needs neither OpenSSL's headers nor a link to it; nil when it is not there
    /// (libpq without OpenSSL has no TLS connections to ask about).
    private static let sslPending: (@convention(c) (UnsafeMutableRawPointer?) -> Int32)? = {
        #if canImport(Darwin)
        let everywhere = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
        #else
        let everywhere: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
        #endif
        guard let symbol = dlsym(everywhere, "SSL_pending") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutableRawPointer?) -> Int32).self)
    }()

    /// Whether OpenSSL holds decrypted bytes of `handle`'s connection that libpq has not read:
    /// then `PQconsumeInput` has more to read although the socket may not be readable. False
    /// for a connection without TLS.
    static func hasUnreadBytes(_ handle: OpaquePointer) -> Bool {
        guard let ssl = PQsslStruct(handle, "OpenSSL"), let pending = Self.sslPending else { return false }
        return pending(ssl) > 0
    }
}
