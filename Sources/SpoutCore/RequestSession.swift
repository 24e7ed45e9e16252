/// Who a request runs as in the database: the PostgreSQL role to switch to and the verified
/// claims, set for the request's transaction only.
///
/// Contract: ``statement(for:)`` is one `SELECT set_config(...)` with the role and the claims
/// bound as parameters (never spliced into SQL text), local to the transaction (`is_local`
/// true, the effect of `SET LOCAL ROLE`): its commit or rollback restores the connection's own
/// role and clears `request.jwt.claims`, so a pooled connection carries nothing into the next
/// request. Row-level security policies read the claims with
/// `current_setting('request.jwt.claims', true)::json ->> 'sub'`.
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

    /// The statement that applies this session inside an open transaction, and its arguments;
    /// nil where the dialect has no such settings (SQLite).
    public func statement(for dialect: SQLDialect) -> (sql: ParsedSQL, arguments: [SQLValue])? {
        guard dialect == .postgres else { return nil }
        let claims = "set_config('\(Self.claimsSetting)', :claims, true)"
        if let role = self.role {
            let sql = "SELECT set_config('role', :role, true), \(claims)"
            return ((try? ParsedSQL.cached(sql, dialect: dialect))!, [.text(role), .text(self.claimsJSON)])
        }
        return ((try? ParsedSQL.cached("SELECT \(claims)", dialect: dialect))!, [.text(self.claimsJSON)])
    }
}
