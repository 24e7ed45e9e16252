import Crypto

/// An HTTP entity tag (RFC 9110 §8.8.3): the validator `If-None-Match` is compared with.
///
/// Spout makes two kinds. A response sent whole gets a **strong** tag: 128 bits of the SHA-256
/// of its body, so two servers with the same data give the same tag, and any change to the
/// bytes changes it. A streamed response can only be tagged before it runs, from what an
/// endpoint's `versionSql` returns: a **weak** tag, a digest of that value and the response's
/// format. A body sent in a coding (``ContentCoding``: `zstd`, `gzip`, `deflate`), streamed or
/// whole, has the coding's name appended to its tag (`"…-gzip"`), so two representations never
/// share a tag; comparisons ignore the suffix, as they ignore `W/` (RFC 9110's weak comparison
/// for `If-None-Match`).
public struct EntityTag: Sendable, Hashable, CustomStringConvertible {
    /// The tag between its quotes.
    public var opaque: String
    public var isWeak: Bool

    public init(opaque: String, isWeak: Bool) {
        self.opaque = opaque
        self.isWeak = isWeak
    }

    /// The field value: `"opaque"` or `W/"opaque"`.
    public var description: String { (self.isWeak ? "W/" : "") + "\"" + self.opaque + "\"" }

    /// A strong tag for `body`.
    public static func strong(body: [UInt8]) -> EntityTag {
        EntityTag(opaque: self.hex(SHA256.hash(data: body)), isWeak: false)
    }

    /// A weak tag digesting `parts` (each length-prefixed, so the split between them counts).
    public static func weak(digesting parts: [[UInt8]]) -> EntityTag {
        EntityTag(opaque: self.hex(self.digest(parts)), isWeak: true)
    }

    /// A strong tag digesting `parts` as ``weak(digesting:)`` does: for a body whose
    /// representation also depends on something beside its bytes (a stored file's media type).
    public static func strong(digesting parts: [[UInt8]]) -> EntityTag {
        EntityTag(opaque: self.hex(self.digest(parts)), isWeak: false)
    }

    private static func digest(_ parts: [[UInt8]]) -> SHA256.Digest {
        var hasher = SHA256()
        for part in parts {
            withUnsafeBytes(of: UInt64(part.count).bigEndian) { hasher.update(bufferPointer: $0) }
            hasher.update(data: part)
        }
        return hasher.finalize()
    }

    /// Whether an `If-None-Match` field value names this tag: `*`, or one of its
    /// comma-separated tags equal under weak comparison (ignoring `W/` and a coding's mark).
    public func isMatched(byIfNoneMatch field: String?) -> Bool {
        guard let field else { return false }
        return self.isNamed(by: field, strong: false)
    }

    /// Whether an `If-Match` field value names this tag: `*`, or one of its comma-separated
    /// tags equal under strong comparison (RFC 9110 §8.8.3.2: neither tag weak), ignoring a
    /// coding's mark as every comparison here does (a client that was sent `"…-gzip"` names
    /// the same row as one sent `"…"`).
    public func isMatched(byIfMatch field: String) -> Bool {
        self.isNamed(by: field, strong: true)
    }

    /// Whether `field` is `*` or lists this tag; `strong`: weak tags never match.
    private func isNamed(by field: String, strong: Bool) -> Bool {
        let trimmed = field.trimmingBlanks
        if trimmed == "*" { return true }
        if strong && self.isWeak { return false }
        for candidate in trimmed.split(separator: ",") {
            var tag = Substring(candidate.trimmingBlanks)
            if tag.hasPrefix("W/") {
                if strong { continue }
                tag = tag.dropFirst(2)
            }
            guard tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\"") else { continue }
            var opaque = tag.dropFirst().dropLast()
            if let suffix = Self.codingSuffixes.first(where: { opaque.hasSuffix($0) }) { opaque = opaque.dropLast(suffix.count) }
            if opaque == self.opaque { return true }
        }
        return false
    }

    /// `value` marked as the tag of the `coding` representation (`"…-zstd"`, `"…-gzip"`,
    /// `"…-deflate"`); unchanged when it is not a quoted tag or carries a mark already.
    static func marking(_ value: String, coding: ContentCoding) -> String {
        guard value.hasSuffix("\""), !Self.codingSuffixes.contains(where: { value.hasSuffix($0 + "\"") }) else { return value }
        return String(value.dropLast()) + "-" + coding.rawValue + "\""
    }

    /// Every suffix a representation's tag may carry: the codings', and `-z`, which tags of
    /// bodies compressed by NIO's compressor carried before Spout encoded them itself (a
    /// client's cache may still hold them).
    static let codingSuffixes = ContentCoding.allCases.map { "-" + $0.rawValue } + ["-z"]

    /// The first 16 bytes of a digest in lower-case hexadecimal.
    private static func hex(_ digest: SHA256.Digest) -> String {
        digest.withUnsafeBytes { bytes in
            RequestID.hex(UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)))
                + RequestID.hex(UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }
}
