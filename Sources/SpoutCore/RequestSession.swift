/// Who a request runs as in the database: the PostgreSQL role to switch to and the verified
/// claims, set for the request's transaction only.
///
/// Contract: a driver that applies sessions (``DatabaseConnection/begin(readOnly:session:)``) sets the
/// role and the claims bound as parameters (never spliced into SQL text), local to the open
/// transaction (PostgreSQL: `set_config(..., true)`, the effect of `SET LOCAL ROLE`): its commit
/// or rollback restores the connection's own role and clears ``claimsSetting``, so a pooled
/// connection carries nothing into the next request. Row-level security policies read the
/// claims with `current_setting('request.jwt.claims', true)::json ->> 'sub'`.
public struct RequestSession: Sendable, Hashable {
    /// The setting holding the claims as JSON text.
    public static let claimsSetting = "request.jwt.claims"

    /// The role to switch to; nil keeps the connection's own.
    public var role: String?
    /// The claims as a JSON object (`{}` for an anonymous request).
    public var claimsJSON: String

    public init(role: String?, claimsJSON: String) {
        self.role = role
        self.claimsJSON = claimsJSON
    }
}
