import Foundation

/// The opt-in on-disk response cache of a ``SpoutClient`` (docs/client.md, "The cache").
///
/// Successful GET bodies are stored with their `ETag`; the next GET of the same URL sends
/// `If-None-Match` and a `304` is answered from the stored body. With
/// ``staleIfUnavailable``, a GET whose server cannot be reached, or answers `5xx`, is answered
/// from the stored body too, marked ``ResponseSource/stale(storedAt:)``.
public struct SpoutCacheConfiguration: Sendable {
    /// The folder of the cache's files (created when missing). The clients of one process
    /// may share a folder; two processes may not.
    public var directory: URL
    /// The most bytes of bodies kept: when this client stores a body, the least recently used
    /// are evicted beyond it; a body bigger than this is not stored.
    public var maximumBytes: Int
    /// Whether a stored copy answers when the network or the server fails (the policy).
    public var staleIfUnavailable: Bool

    public init(directory: URL, maximumBytes: Int = 64 * 1024 * 1024, staleIfUnavailable: Bool = false) {
        self.directory = directory
        self.maximumBytes = maximumBytes
        self.staleIfUnavailable = staleIfUnavailable
    }
}
