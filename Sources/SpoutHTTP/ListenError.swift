import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The server could not listen on its address: which address and port, and why, in words an
/// operator can act on (a port in use names the setting that chooses another).
public struct ListenError: Error, Sendable, CustomStringConvertible {
    /// The configured host (`127.0.0.1`, `::`).
    public let host: String
    public let port: Int
    /// The reason: the system's text for the socket error, or the underlying error's.
    public let reason: String
    /// Whether another socket holds the address (`EADDRINUSE`).
    public let addressInUse: Bool

    public init(host: String, port: Int, underlying error: any Error) {
        self.host = host
        self.port = port
        if let error = error as? IOError {
            self.addressInUse = error.errnoCode == EADDRINUSE
            self.reason = String(cString: strerror(error.errnoCode)).lowercased()
        } else {
            self.addressInUse = false
            self.reason = String(describing: error)
        }
    }

    /// `host:port`, an IPv6 host in brackets (`[::]:8080`).
    public var address: String {
        (self.host.contains(":") ? "[\(self.host)]" : self.host) + ":\(self.port)"
    }

    public var description: String {
        let advice = self.addressInUse ? " (another process listens there: stop it, or choose another port with --port or SPOUT_PORT)" : ""
        return "cannot listen on \(self.address): \(self.reason)\(advice)"
    }
}
