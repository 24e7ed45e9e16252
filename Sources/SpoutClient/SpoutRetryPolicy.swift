/// When a ``SpoutClient`` sends a GET again (docs/client.md, "Retries").
///
/// Only GETs (streamed rows, objects, pages) are retried, and only when no response arrived
/// at all (``SpoutClientError/connectionFailed(_:)``: refused, reset, or a kept-alive
/// connection the server had closed): no row has reached the caller then, and a GET changes
/// nothing on the server. A response that arrived is never retried, whatever its status, and
/// neither is a body that breaks off after rows were delivered
/// (``SpoutClientError/truncatedBody`` reaches the caller). Writes are never retried.
public struct SpoutRetryPolicy: Sendable, Equatable {
    /// How many times a GET is sent at most, the first time included (1: no retry).
    public var maximumAttempts: Int
    /// The pause before the first retry; each later pause doubles, up to ``maximumBackoff``.
    public var initialBackoff: Duration
    public var maximumBackoff: Duration

    public init(maximumAttempts: Int = 3, initialBackoff: Duration = .milliseconds(100), maximumBackoff: Duration = .seconds(2)) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// One attempt, no retry.
    public static let never = SpoutRetryPolicy(maximumAttempts: 1)

    /// The pause before attempt `attempt` (2 for the first retry).
    func backoff(before attempt: Int) -> Duration {
        var pause = self.initialBackoff
        for _ in 2..<max(2, attempt) where pause < self.maximumBackoff { pause *= 2 }
        return min(pause, self.maximumBackoff)
    }
}
