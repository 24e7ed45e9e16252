import Foundation
import HTTPTypes

/// Who the on-disk cache keeps a response for: the identity behind a request's credentials,
/// so that one caller's stored body never answers another's request (offline either).
///
/// Rules:
/// - A bearer JWT is keyed by its issuer and subject (`iss`, `sub`, read from its payload
///   without verifying it: the token is the app's own): a renewed token of the same user
///   finds the user's stored bodies.
/// - Any other credential (a JWT without `sub`, an opaque bearer token, an `X-API-Key`) is
///   keyed by its SHA-256.
/// - No credential: no identity; the key is the URL and `Accept` alone, as before identities.
enum CacheIdentity {
    /// The identity of a request with `headers`, or nil for none.
    static func of(_ headers: HTTPFields) -> String? {
        if let authorization = headers[.authorization] {
            let credential = Self.bearerCredential(authorization) ?? authorization
            if let subject = Self.jwtSubject(credential) { return subject }
            return "sha256:" + Self.digest(credential)
        }
        if let name = HTTPField.Name("X-API-Key"), let key = headers[name] { return "sha256:" + Self.digest(key) }
        return nil
    }

    /// `iss` and `sub` of a JWT's payload, as `jwt:ISS SUB`; nil for anything else.
    static func jwtSubject(_ token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacing("-", with: "+").replacing("_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let payload = Data(base64Encoded: String(base64)),
            let object = try? JSONSerialization.jsonObject(with: payload) as? [String: Any],
            let subject = object["sub"] as? String
        else { return nil }
        return "jwt:" + ((object["iss"] as? String) ?? "") + " " + subject
    }

    /// The credential of `Bearer <credential>`; nil for another scheme.
    static func bearerCredential(_ authorization: String) -> String? {
        let trimmed = authorization.trimmingCharacters(in: .whitespaces)
        guard trimmed.count > 7, trimmed.prefix(7).lowercased() == "bearer " else { return nil }
        return trimmed.dropFirst(7).trimmingCharacters(in: .whitespaces)
    }

    static func digest(_ text: String) -> String {
        SHA256Hash.hex(text.utf8)
    }
}
