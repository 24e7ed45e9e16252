import Foundation
import HTTPTypes

/// What a request for live notices says in its head, read the same way everywhere.
enum LiveNoticeRequest {
    /// The header an `EventSource` sends on reconnecting: the id of the last event it had.
    static let lastEventID = HTTPField.Name("Last-Event-ID")!

    /// Whether `accept` (the request's `Accept` fields) names `text/event-stream` with a
    /// quality above 0.
    static func asksForEvents(_ accept: [String]) -> Bool {
        for field in accept {
            for item in field.split(separator: ",") {
                let parts = item.split(separator: ";")
                guard let range = parts.first, range.trimmingCharacters(in: .whitespaces).lowercased() == "text/event-stream" else {
                    continue
                }
                let refused = parts.dropFirst().contains { parameter in
                    let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    return pair.count == 2 && pair[0] == "q" && (Double(pair[1]) ?? 1) == 0
                }
                if !refused { return true }
            }
        }
        return false
    }

    /// When `identity`'s token expires, on the continuous clock; nil without an `exp` claim.
    static func expiry(of identity: RequestIdentity?) -> ContinuousClock.Instant? {
        guard let seconds = identity?.claims?.value(at: "exp")?.seconds else { return nil }
        let left = seconds - Date().timeIntervalSince1970
        return .now + .milliseconds(Int64(max(0, min(left, 1e9)) * 1_000))
    }

    /// The claims that make subscribers one group: all but those of the token's own lifetime
    /// and id (`exp`, `iat`, `nbf`, `jti`), so two tokens of one caller share a group.
    static func groupingClaims(_ claims: TokenClaims) -> String {
        ClaimValue.object(claims.claims.filter { !["exp", "iat", "nbf", "jti"].contains($0.key) }).jsonText
    }
}
