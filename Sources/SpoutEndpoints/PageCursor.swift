import Crypto
import Foundation
import SpoutCore
import SpoutHTTP

/// The `after` argument of a paged endpoint: the previous page's last key, typed, sealed
/// with an HMAC so that a changed, truncated or foreign cursor is refused (400) before any SQL.
///
/// A cursor is base64url (no padding) of: a version byte, the key's values (each a type tag
/// and its bytes, so an integer comes back an integer and a date a date), and the first
/// 16 bytes of HMAC-SHA256 over the endpoint (`GET /employees`), the request's other
/// arguments (filters: a cursor from `?lastName=Smith` does not continue `?lastName=Jones`)
/// and the values. Nothing in it is secret — it is the last row's key, which the client has
/// already seen — but nothing in it can be forged without the key (``PageCursorKey``).
struct PageCursor: Sendable, Hashable {
    /// The key's values in the last row of the previous page.
    var values: [SQLValue]

    static let version: UInt8 = 1
    static let macLength = 16

    /// Why a cursor was refused (the text of the 400).
    struct Refused: Error, Sendable, Hashable {
        var reason: String
    }

    /// The cursor's text for the page after `values`.
    func sealed(with key: PageCursorKey, context: [UInt8]) -> String {
        var payload: [UInt8] = [Self.version]
        for value in self.values { Self.append(value, to: &payload) }
        let mac = key.authenticationCode(for: context + payload)
        return Self.base64URL(payload + mac)
    }

    /// Opens a cursor made by ``sealed(with:context:)`` for the same endpoint and arguments.
    static func open(_ text: String, with key: PageCursorKey, context: [UInt8], keyCount: Int) throws(Refused) -> PageCursor {
        guard let bytes = Self.bytes(base64URL: text), bytes.count > Self.macLength + 1 else {
            throw Refused(reason: "not a page cursor")
        }
        let payload = Array(bytes.dropLast(Self.macLength))
        let mac = Array(bytes.suffix(Self.macLength))
        guard key.isAuthentic(mac, for: context + payload) else {
            throw Refused(reason: "page cursor not valid here (changed, from another query, or from before a restart)")
        }
        guard payload[0] == Self.version else { throw Refused(reason: "page cursor of an unknown version") }
        var reader = Reader(bytes: payload, position: 1)
        var values: [SQLValue] = []
        while reader.position < payload.count {
            guard let value = reader.value() else { throw Refused(reason: "not a page cursor") }
            values.append(value)
        }
        guard values.count == keyCount else { throw Refused(reason: "page cursor of another key") }
        return PageCursor(values: values)
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
        Data(bytes).base64EncodedString()
            .replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
    }

    static func bytes(base64URL text: String) -> [UInt8]? {
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
        var standard = text.replacing("-", with: "+").replacing("_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}

/// The HMAC key page cursors are sealed with: the `cursorSecret` setting, or random bytes
/// chosen at startup (cursors then last as long as the process and are refused by other
/// instances: set the secret when several serve one API, or to keep cursors over restarts).
public struct PageCursorKey: Sendable {
    /// The key's 32 bytes (`SymmetricKey` is not `Sendable`; one is made for each use).
    private let bytes: [UInt8]

    /// A key derived from a configured secret (any length; the same secret, the same key).
    public init(secret: String) {
        self.bytes = Array(SHA256.hash(data: Array("spout page cursor\u{0}\(secret)".utf8)))
    }

    /// A random key, for this process only.
    public static func random() -> PageCursorKey {
        PageCursorKey(bytes: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    func authenticationCode(for message: [UInt8]) -> [UInt8] {
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: self.bytes))
        return Array(Array(code).prefix(PageCursor.macLength))
    }

    /// Compares in constant time.
    func isAuthentic(_ code: [UInt8], for message: [UInt8]) -> Bool {
        ConstantTime.equals(self.authenticationCode(for: message), code)
    }
}
