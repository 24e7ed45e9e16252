import Crypto
import Foundation

/// A setting that every instance serving one database must have alike, or clients see one
/// instance accept what another refuses: the secret page cursors are sealed with, and how
/// tokens are verified. Instances compare them through the database (``InstanceKeys``), by
/// fingerprint: the value itself (a secret) is never stored, logged or sent.
///
/// Contract:
/// - ``fingerprint`` is empty when the setting is unset, else 32 hex digits of SHA-256 over
///   a fixed label, the setting's name and its value: equal values give equal fingerprints on
///   every instance; nothing about the value can be read from it but by trying guesses, which
///   a secret long enough and random (as `SPOUT_JWT_SECRET` must be: 32 bytes at least) defeats.
/// - ``compare(with:)`` tells apart a different value, a value unset here and one unset there.
public struct SharedSetting: Sendable, Hashable {
    /// The setting as an operator sets it, and its row in `spout_shared_settings`:
    /// `cursorSecret`, the JWT secret's variable (`SPOUT_JWT_SECRET`), `identity.jwksUrl`…
    public var name: String
    public var fingerprint: String
    /// What a difference does to clients, for the warning.
    public var consequence: String

    public init(name: String, value: String, consequence: String) {
        self.name = name
        self.fingerprint = Self.fingerprint(name: name, value: value)
        self.consequence = consequence
    }

    /// See the type's contract.
    public static func fingerprint(name: String, value: String) -> String {
        guard !value.isEmpty else { return "" }
        let digest = SHA256.hash(data: Array("spout shared setting\u{0}\(name)\u{0}\(value)".utf8))
        return KeyTable.hex(Array(Array(digest).prefix(16)))
    }

    /// The settings of `configuration` (with the JWT secret from `environment`) that must be
    /// equal on every instance.
    public static func of(_ configuration: SpoutConfiguration, environment: [String: String]) -> [SharedSetting] {
        let identity = configuration.identity
        let token = "a token one instance accepts, another refuses (401)"
        return [
            SharedSetting(
                name: "cursorSecret", value: configuration.cursorSecret,
                consequence: "a page's next link made by one instance is refused by another (400)"),
            SharedSetting(name: identity.secretFromEnvironment, value: environment[identity.secretFromEnvironment] ?? "", consequence: token),
            SharedSetting(name: "identity.jwksUrl", value: identity.jwksUrl, consequence: token),
            SharedSetting(name: "identity.issuer", value: identity.issuer, consequence: token),
            SharedSetting(name: "identity.audience", value: identity.audience, consequence: token),
        ]
    }

    /// How this instance's value compares with the one another instance recorded.
    public enum Comparison: Sendable, Hashable {
        case same
        case differs
        /// Set there, unset here.
        case unsetHere
        /// Set here, unset there.
        case unsetThere
    }

    public func compare(with recorded: RecordedFingerprint) -> Comparison {
        switch (self.fingerprint.isEmpty, recorded.fingerprint.isEmpty) {
        case _ where self.fingerprint == recorded.fingerprint: .same
        case (true, false): .unsetHere
        case (false, true): .unsetThere
        default: .differs
        }
    }

    /// The warning for a `comparison` other than ``Comparison/same`` with `recorded`; nil for same.
    public func warning(_ comparison: Comparison, recorded: RecordedFingerprint) -> String? {
        let other = "instance \(recorded.recordedBy) (started \(KeyTable.utc(recorded.recordedAt)))"
        let what: String
        switch comparison {
        case .same: return nil
        case .differs: what = "\(self.name) here differs from the one \(other) has"
        case .unsetHere: what = "\(self.name) is not set here, but \(other) has it set"
        case .unsetThere: what = "\(self.name) is set here, but \(other) has it unset"
        }
        return what + ": \(self.consequence). Set the same \(self.name) on every instance that serves this database "
            + "(compared by fingerprint in \(KeyTable.settingsTable); no value is stored)"
    }
}
