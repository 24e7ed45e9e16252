/// Who a request runs as in the database, and which trace it belongs to: the PostgreSQL role to
/// switch to, the verified claims and the request's trace context, set for the request's
/// transaction only.
///
/// Contract: a driver that applies sessions (``DatabaseConnection/begin(readOnly:session:)``) sets the
/// role and the claims bound as parameters (never spliced into SQL text), local to the open
/// transaction (PostgreSQL: `set_config(..., true)`, the effect of `SET LOCAL ROLE`): its commit
/// or rollback restores the connection's own role and clears ``claimsSetting``, so a pooled
/// connection carries nothing into the next request. Row-level security policies read the
/// claims with `current_setting('request.jwt.claims', true)::json ->> 'sub'`. The trace
/// context goes first in the transaction's `application_name` (``traceContext``), which
/// `pg_stat_activity` and `log_line_prefix`'s `%a` show.
public struct RequestSession: Sendable, Hashable {
    /// The setting holding the claims as JSON text.
    public static let claimsSetting = "request.jwt.claims"

    /// The role to switch to; nil keeps the connection's own.
    public var role: String?
    /// The claims as a JSON object (`{}` for an anonymous request on a token-covered
    /// endpoint); nil: the request has no identity, and ``claimsSetting`` is left alone.
    public var claimsJSON: String?
    /// The request's W3C trace context, `<trace id>-<span id>` of the server's span; nil: not
    /// shown to the database.
    public var traceContext: String?

    public init(role: String?, claimsJSON: String?, traceContext: String? = nil) {
        self.role = role
        self.claimsJSON = claimsJSON
        self.traceContext = traceContext
    }
}
