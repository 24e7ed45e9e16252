/// When the keys of a JWKS URL are fetched again (`identity.jwksURL`).
///
/// Rules, in this order:
/// 1. Never sooner than ``cooldown`` after the last attempt, whatever its outcome: a flood of
///    tokens with made-up `kid`s, or an identity provider that is down, costs at most one
///    fetch per cooldown.
/// 2. Before the first successful fetch: fetch.
/// 3. Keys fetched ``refreshInterval`` ago or longer: fetch (a removed key stops verifying
///    within that time).
/// 4. A token names a `kid` the keys do not hold: fetch (a key the provider just added
///    verifies on first use, without waiting for the interval).
///
/// A pure value: the caller passes the instants it keeps, so the rules are tested without
/// time passing.
public struct JWKSRefreshPolicy: Sendable, Hashable {
    /// How long fetched keys are used before they are fetched again.
    public var refreshInterval: Duration
    /// The least time between two attempts.
    public var cooldown: Duration

    public init(refreshInterval: Duration, cooldown: Duration) {
        self.refreshInterval = refreshInterval
        self.cooldown = cooldown
    }

    /// Whether to fetch before verifying a token at `now`.
    /// - Parameters:
    ///   - lastSuccess: when keys were last fetched and decoded; nil before the first time.
    ///   - lastAttempt: when a fetch last started, whatever its outcome; nil before the first.
    ///   - keyIsKnown: whether the keys hold the token's `kid` (true for a token without one
    ///     while any key is held).
    public func needsFetch(
        now: ContinuousClock.Instant, lastSuccess: ContinuousClock.Instant?, lastAttempt: ContinuousClock.Instant?,
        keyIsKnown: Bool
    ) -> Bool {
        if let lastAttempt, now < lastAttempt + self.cooldown { return false }
        guard let lastSuccess else { return true }
        if now >= lastSuccess + self.refreshInterval { return true }
        return !keyIsKnown
    }
}
