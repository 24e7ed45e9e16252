import Crypto
import SpoutCore
import SpoutHTTP

/// The `after` argument of a paged endpoint: the previous page's last key, typed, sealed
/// with an HMAC so that a changed, truncated or foreign cursor is refused (400) before any SQL.
///
/// A cursor is base64url (no padding) of: a version byte (2), the id of the key that sealed it
/// (4 bytes, big-endian: ``PageCursorKey/id``), the key's values (each a type tag and its
/// bytes, so an integer comes back an integer and a date a date), and the first 16 bytes of
/// HMAC-SHA256 over the endpoint (`GET /employees`), the request's other arguments (filters: a
/// cursor from `?lastName=Smith` does not continue `?lastName=Jones`), the version, the key id
/// and the values. Nothing in it is secret — it is the last row's key, which the client has
/// already seen — but nothing in it can be forged without the key. The key id lets every
/// instance serving one database pick the right one of the keys they share (``InstanceKeys``),
/// across restarts and key rotations. Version 1 (no key id, sealed with `cursorSecret`) still
/// opens where that secret is set.
struct PageCursor: Sendable, Hashable {
    /// The key's values in the last row of the previous page.
    var values: [SQLValue]

    static let version: UInt8 = 2
    /// Cursors made before key ids: the operator's secret sealed them.
    static let versionWithoutKeyID: UInt8 = 1
    static let macLength = 16

    /// Why a cursor was refused (the text of the 400).
    struct Refused: Error, Sendable, Hashable {
        var reason: String

        static let notValid = Refused(reason: "page cursor not valid here (changed, from another query, or sealed with another key)")
        /// A key id no key here has.
        static let unknownKey = Refused(
            reason: "page cursor sealed with a key this server does not hold (from another database, or from an instance that keeps a key of its own: see cursorSecret); start again from the first page")
        static let retiredKey = Refused(
            reason: "page cursor too old: the key that sealed it was retired by a key rotation; start again from the first page")
    }

    /// The cursor's text for the page after `values`.
    func sealed(with key: PageCursorKey, context: [UInt8]) -> String {
        var payload: [UInt8] = [Self.version]
        withUnsafeBytes(of: key.id.bigEndian) { payload.append(contentsOf: $0) }
        for value in self.values { Self.append(value, to: &payload) }
        let mac = key.authenticationCode(for: context + payload)
        return Self.base64URL(payload + mac)
    }

    /// A cursor's text decoded, not yet verified: which key sealed it.
    struct Sealed: Sendable {
        /// Everything the MAC covers but the context: the version, the key id, the values.
        let payload: [UInt8]
        let mac: [UInt8]
        let keyID: UInt32
        /// Where the values start in ``payload``.
        let valuesStart: Int

        init(_ text: String) throws(Refused) {
            guard let bytes = PageCursor.bytes(base64URL: text), bytes.count > PageCursor.macLength + 1 else {
                throw Refused(reason: "not a page cursor")
            }
            let payload = Array(bytes.dropLast(PageCursor.macLength))
            switch payload[0] {
            case PageCursor.version:
                guard payload.count > 5 else { throw Refused(reason: "not a page cursor") }
                self.keyID = payload[1..<5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                self.valuesStart = 5
            case PageCursor.versionWithoutKeyID:
                self.keyID = PageCursorKey.operatorSecretID
                self.valuesStart = 1
            default:
                throw Refused(reason: "page cursor of an unknown version")
            }
            self.payload = payload
            self.mac = Array(bytes.suffix(PageCursor.macLength))
        }

        /// The cursor, when `key` (the key of ``keyID``) sealed it for the same endpoint and
        /// arguments (`context`) and it holds `keyCount` values.
        func open(with key: PageCursorKey, context: [UInt8], keyCount: Int) throws(Refused) -> PageCursor {
            guard key.isAuthentic(self.mac, for: context + self.payload) else { throw Refused.notValid }
            var reader = Reader(bytes: self.payload, position: self.valuesStart)
            var values: [SQLValue] = []
            while reader.position < self.payload.count {
                guard let value = reader.value() else { throw Refused(reason: "not a page cursor") }
                values.append(value)
            }
            guard values.count == keyCount else { throw Refused(reason: "page cursor of another key") }
            return PageCursor(values: values)
        }
    }

    /// Opens a cursor made by ``sealed(with:context:)`` with `key` (tests; requests look the
    /// key up by ``Sealed/keyID`` first).
    static func open(_ text: String, with key: PageCursorKey, context: [UInt8], keyCount: Int) throws(Refused) -> PageCursor {
        let sealed = try Sealed(text)
        guard sealed.keyID == key.id else { throw Refused.unknownKey }
        return try sealed.open(with: key, context: context, keyCount: keyCount)
    }

    /// The bytes a cursor is bound to: the endpoint and its arguments other than the page's own
    /// (in declaration order, each typed).
    static func context(endpoint: String, arguments: [(String, SQLValue)]) -> [UInt8] {
        var bytes = Array(endpoint.utf8)
        for (name, value) in arguments {
            bytes.append(0)
            bytes.append(contentsOf: name.utf8)
            bytes.append(0)
            Self.append(value, to: &bytes)
        }
        return bytes
    }

    // MARK: Typed values

    private static func append(_ value: SQLValue, to bytes: inout [UInt8]) {
        func integer(_ tag: Character, _ number: Int64) {
            bytes.append(tag.asciiValue!)
            withUnsafeBytes(of: number.bigEndian) { bytes.append(contentsOf: $0) }
        }
        func text(_ tag: Character, _ string: String) {
            bytes.append(tag.asciiValue!)
            withUnsafeBytes(of: UInt32(string.utf8.count).bigEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: string.utf8)
        }
        switch value {
        case .null: bytes.append(UInt8(ascii: "n"))
        case .integer(let number): integer("i", number)
        case .double(let number): integer("f", Int64(bitPattern: number.bitPattern))
        case .decimal(let string): text("m", string)
        case .bool(let flag): integer("b", flag ? 1 : 0)
        case .text(let string): text("s", string)
        case .date(let days): integer("d", days)
        case .timestamp(let microseconds): integer("t", microseconds)
        case .time(let string): text("h", string)
        case .json(let string): text("j", string)
        case .bytes(let data):
            bytes.append(UInt8(ascii: "x"))
            withUnsafeBytes(of: UInt32(data.count).bigEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: data)
        case .array(let items):
            bytes.append(UInt8(ascii: "a"))
            withUnsafeBytes(of: UInt32(items.count).bigEndian) { bytes.append(contentsOf: $0) }
            for item in items { self.append(item, to: &bytes) }
        }
    }

    /// Reads values written by ``append(_:to:)``; nil on anything malformed.
    private struct Reader {
        let bytes: [UInt8]
        var position: Int

        mutating func value() -> SQLValue? {
            guard self.position < self.bytes.count else { return nil }
            let tag = self.bytes[self.position]
            self.position += 1
            switch tag {
            case UInt8(ascii: "n"): return .null
            case UInt8(ascii: "i"): return self.integer().map { .integer($0) }
            case UInt8(ascii: "f"): return self.integer().map { .double(Double(bitPattern: UInt64(bitPattern: $0))) }
            case UInt8(ascii: "m"): return self.text().map { .decimal($0) }
            case UInt8(ascii: "b"): return self.integer().map { .bool($0 != 0) }
            case UInt8(ascii: "s"): return self.text().map { .text($0) }
            case UInt8(ascii: "d"): return self.integer().map { .date(days: $0) }
            case UInt8(ascii: "t"): return self.integer().map { .timestamp(microseconds: $0) }
            case UInt8(ascii: "h"): return self.text().map { .time($0) }
            case UInt8(ascii: "j"): return self.text().map { .json($0) }
            case UInt8(ascii: "x"): return self.data().map { .bytes($0) }
            default: return nil
            }
        }

        private mutating func integer() -> Int64? {
            guard self.position + 8 <= self.bytes.count else { return nil }
            var number: Int64 = 0
            for byte in self.bytes[self.position..<(self.position + 8)] { number = number << 8 | Int64(byte) }
            self.position += 8
            return number
        }

        private mutating func data() -> [UInt8]? {
            guard self.position + 4 <= self.bytes.count else { return nil }
            var length = 0
            for byte in self.bytes[self.position..<(self.position + 4)] { length = length << 8 | Int(byte) }
            self.position += 4
            guard length <= self.bytes.count - self.position else { return nil }
            defer { self.position += length }
            return Array(self.bytes[self.position..<(self.position + length)])
        }

        private mutating func text() -> String? {
            guard let data = self.data() else { return nil }
            return String(validating: data, as: UTF8.self)
        }
    }

    // MARK: base64url

    static func base64URL(_ bytes: [UInt8]) -> String {
        Base64Text.urlSafe(bytes)
    }

    static func bytes(base64URL text: String) -> [UInt8]? {
        Base64Text.decode(text)
    }
}

/// An HMAC key page cursors are sealed with, and its id, which every cursor it seals carries
/// (``InstanceKeys`` says which key seals and which opens): the `cursorSecret` setting (id 0),
/// a key of the database's `spout_keys` (ids from 1), or random bytes of this process only
/// (`UInt32.max`: cursors then last as long as the process and other instances refuse them).
public struct PageCursorKey: Sendable {
    /// The id of the key derived from `cursorSecret`.
    public static let operatorSecretID: UInt32 = 0
    /// The id of a key of this process only.
    public static let processOnlyID: UInt32 = .max

    public let id: UInt32
    /// HMAC-SHA256 keyed with the key's 32 bytes, not yet fed: each code starts from a copy,
    /// so the key's pads are hashed once, not for every cursor.
    private let keyed: HMAC<SHA256>

    /// A key derived from a configured secret (any length; the same secret, the same key).
    public init(secret: String) {
        self.init(id: Self.operatorSecretID, bytes: Array(SHA256.hash(data: Array("spout page cursor\u{0}\(secret)".utf8))))
    }

    /// The page cursor key of a stored key `id` whose secret is `master` (each use of a stored
    /// key derives its own: HMAC-SHA256 of the use's label under the secret).
    public init(id: UInt32, master: [UInt8]) {
        self.init(
            id: id, bytes: Array(HMAC<SHA256>.authenticationCode(for: Array("spout page cursor".utf8), using: SymmetricKey(data: master))))
    }

    /// A random key, for this process only.
    public static func random() -> PageCursorKey {
        PageCursorKey(id: Self.processOnlyID, bytes: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }

    private init(id: UInt32, bytes: [UInt8]) {
        self.id = id
        self.keyed = HMAC<SHA256>(key: SymmetricKey(data: bytes))
    }

    func authenticationCode(for message: [UInt8]) -> [UInt8] {
        var code = self.keyed
        code.update(data: message)
        return Array(Array(code.finalize()).prefix(PageCursor.macLength))
    }

    /// Compares in constant time.
    func isAuthentic(_ code: [UInt8], for message: [UInt8]) -> Bool {
        ConstantTime.equals(self.authenticationCode(for: message), code)
    }
}
