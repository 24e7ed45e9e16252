import Foundation

/// Where a response's body came from.
public enum ResponseSource: Sendable, Equatable {
    /// The server sent it.
    case network
    /// The server answered `304 Not Modified` to `If-None-Match`: the cached copy is current.
    case revalidated
    /// The server could not be reached or failed: a cached copy stored at `storedAt`, which
    /// may be out of date.
    case stale(storedAt: Date)

    /// Whether the body may be out of date.
    public var isStale: Bool {
        if case .stale = self { return true }
        return false
    }
}
