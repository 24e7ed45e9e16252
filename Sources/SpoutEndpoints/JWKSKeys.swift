import Foundation
import JWTKit
import Logging

/// The public keys held at one time, each fixed to the algorithms it verifies when it is
/// loaded: a key whose JWK names an `alg` serves that algorithm only; a key without one (as
/// Microsoft Entra ID publishes them) serves every algorithm of ``JWKSKeys/algorithms`` its
/// type and size can (RS256 and PS256 for RSA, ES256 or ES384 by curve, EdDSA).
///
/// Contract:
/// - Nothing a token says changes a ``JWKSKeys``: jwt-kit makes the signer of an alg-less key
///   for the first algorithm it is asked for and keeps it, so each algorithm gets its own
///   collection, whose signers are all made here, from the JWKS alone.
/// - A key no algorithm can use (too short an RSA modulus, an unknown curve or type) is in
///   ``unusable`` with the reason, and logged once per load; it verifies nothing.
public struct JWKSKeys: Sendable {
    /// The public-key algorithms Spout verifies.
    public static let algorithms = ["RS256", "PS256", "ES256", "ES384", "EdDSA"]

    /// The shortest RSA modulus accepted, in bits (jwt-kit refuses shorter ones).
    static let minimumRSABits = 2_048

    /// One collection per algorithm, with the `kid`s it holds.
    public let byAlgorithm: [String: (collection: JWTKeyCollection, identifiers: Set<String>)]
    /// The `kid`s usable for some algorithm.
    public let identifiers: Set<String>
    /// The `kid`s of keys that cannot verify anything, with the reason (no key material).
    public let unusable: [String: String]
    /// Increases with every successful fetch of the JWKS URL.
    public let generation: Int

    /// The keys of `jwks`, logged to `logger` when one cannot be used.
    static func load(_ jwks: [JWK], generation: Int, logger: Logger) async -> JWKSKeys {
        var byAlgorithm: [String: (collection: JWTKeyCollection, identifiers: Set<String>)] = [:]
        var unusable: [String: String] = [:]
        var identifiers: Set<String> = []
        for jwk in jwks {
            // A token chooses its key by `kid`; a key without one could never be chosen.
            guard let kid = jwk.keyIdentifier?.string else { continue }
            var served: [String] = []
            for algorithm in Self.candidates(for: jwk) {
                guard let fixed = await Self.signer(jwk, kid: kid, algorithm: algorithm) else { continue }
                var entry = byAlgorithm[algorithm] ?? (JWTKeyCollection(), [])
                _ = try? await entry.collection.add(jwk: fixed)
                entry.identifiers.insert(kid)
                byAlgorithm[algorithm] = entry
                served.append(algorithm)
            }
            if served.isEmpty {
                let reason = Self.whyUnusable(jwk)
                unusable[kid] = reason
                logger.warning("identity: a JWKS key cannot be used and is skipped", metadata: ["kid": "\(kid)", "reason": "\(reason)"])
            } else {
                identifiers.insert(kid)
            }
        }
        return JWKSKeys(byAlgorithm: byAlgorithm, identifiers: identifiers, unusable: unusable, generation: generation)
    }

    /// The algorithms worth trying for `jwk`: its own `alg`, or every one Spout verifies.
    private static func candidates(for jwk: JWK) -> [String] {
        guard let named = jwk.algorithm?.rawValue else { return Self.algorithms }
        return Self.algorithms.contains(named) ? [named] : []
    }

    /// `jwk` fixed to `algorithm` as a one-key collection's signer, or nil when the key cannot
    /// serve it. The signer is made now (asking for it with the algorithm makes it), so it is
    /// never made later for a token's algorithm.
    private static func signer(_ jwk: JWK, kid: String, algorithm: String) async -> JWK? {
        var fixed = jwk
        guard let named = JWK.Algorithm(rawValue: algorithm) else { return nil }
        fixed.algorithm = named
        let probe = JWTKeyCollection()
        guard (try? await probe.add(jwk: fixed)) != nil,
            let key = try? await probe.getKey(for: JWKIdentifier(string: kid), alg: algorithm), key.name == algorithm
        else { return nil }
        return fixed
    }

    /// Why no algorithm can use `jwk`, in words for an operator's log and a token's refusal.
    static func whyUnusable(_ jwk: JWK) -> String {
        if let named = jwk.algorithm?.rawValue, !Self.algorithms.contains(named) {
            return "its algorithm \(named) is not one Spout verifies (\(Self.algorithms.joined(separator: ", ")))"
        }
        if let modulus = jwk.modulus, let bits = Self.bits(ofBase64URL: modulus), bits < Self.minimumRSABits {
            return "an RSA key of \(bits) bits (at least \(Self.minimumRSABits) are needed)"
        }
        return "its type, curve or parameters fit none of \(Self.algorithms.joined(separator: ", "))"
    }

    /// The bit length of a big-endian unsigned integer in base64url, nil when it does not decode.
    static func bits(ofBase64URL text: String) -> Int? {
        guard let bytes = TokenText.decoded(Substring(text), canonical: false) else { return nil }
        guard let first = bytes.firstIndex(where: { $0 != 0 }) else { return 0 }
        return (bytes.count - first) * 8 - bytes[first].leadingZeroBitCount
    }
}
