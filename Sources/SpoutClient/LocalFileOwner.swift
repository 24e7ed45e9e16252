import Foundation
import HTTPTypes

/// Whose a client's local SQLite file is (a sync store, a write queue), and the file's name.
///
/// The owner is the app's `account` when it names one, else the identity of the client's
/// credentials as the response cache keys it (``CacheIdentity``: a JWT's issuer and subject,
/// the SHA-256 of another credential), else `anonymous`.
struct LocalFileOwner: Sendable {
    /// The text the file's name is hashed from.
    let name: String
    /// The credentials' identity the file is for, checked before each request
    /// (``check(_:)``); nil when the app named an account.
    let identity: String?

    init(client: SpoutClient, account: String?) async throws {
        if let account {
            self.name = "account:" + account
            self.identity = nil
        } else {
            let identity = CacheIdentity.of(try await client.headers(renewingToken: false)) ?? "anonymous"
            self.name = identity
            self.identity = identity
        }
    }

    /// `directory/<prefix>-<hash>.sqlite`, the hash (128 bits of SHA-256) of `parts` and the owner.
    func file(in directory: URL, prefix: String, parts: [String]) -> String {
        let text = (parts + [self.name]).joined(separator: "\n")
        let hash = SHA256Hash.hash(text.utf8).prefix(16).map { String(format: "%02x", $0) }.joined()
        return directory.appendingPathComponent("\(prefix)-\(hash).sqlite").path
    }

    /// Throws when `headers` (a request's, credentials included) are another identity's than
    /// the file's: one user's rows or writes never go out with another user's credentials.
    func check(_ headers: HTTPFields) throws {
        guard let identity = self.identity, (CacheIdentity.of(headers) ?? "anonymous") != identity else { return }
        throw SpoutClientError.invalidConfiguration(
            "the client's credentials are another identity's than this local file's: open the one of the current identity")
    }
}
