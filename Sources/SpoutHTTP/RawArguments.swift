/// Textual arguments by name, as a request carries them before conversion: every value of a
/// repeated key, in order. A key seen without a value (`?api`) is present with no values.
///
/// Content (a multipart part, a request body) is kept as its bytes too
/// (``appendContent(_:for:)``): a `bytes` parameter takes it as it is, any other its text.
public struct RawArguments: Sendable, Hashable {
    private var storage: [String: [String]] = [:]
    /// The bytes of each content value by key, in order.
    private var contentStorage: [String: [[UInt8]]] = [:]
    /// Keys in order of first appearance.
    public private(set) var keys: [String] = []
    /// Keys whose values came as a list of their own (a JSON array), not as repeated keys.
    private var lists: Set<String> = []

    public init() {}

    /// Room for `capacity` keys without growing: for a reader that knows how many to expect
    /// (a CSV header's, the last JSON record's).
    public init(capacity: Int) {
        self.storage.reserveCapacity(capacity)
        self.keys.reserveCapacity(capacity)
    }

    public init(_ pairs: [(String, String)]) {
        for (key, value) in pairs { self.append(value, for: key) }
    }

    /// Every value of `key` (empty for a bare key or an absent one).
    public subscript(_ key: String) -> [String] {
        self.storage[key] ?? []
    }

    /// Whether `key` appeared at all, with or without a value (`?api`).
    public func contains(_ key: String) -> Bool {
        self.storage[key] != nil
    }

    public mutating func append(_ value: String, for key: String) {
        // One lookup when the key is there already, two when it is new.
        if self.storage[key]?.append(value) == nil {
            self.storage[key] = [value]
            self.keys.append(key)
        }
    }

    /// Adds content for `key` (a multipart part, a request body): its bytes, and its text when
    /// it is UTF-8 (otherwise ``hasUndecodableContent(_:)`` is true for `key`).
    public mutating func appendContent(_ bytes: [UInt8], for key: String) {
        self.markPresent(key)
        self.contentStorage[key, default: []].append(bytes)
        if let text = String(validating: bytes, as: UTF8.self) { self.storage[key]!.append(text) }
    }

    /// The bytes of every content value of `key`, in order (empty when it came only as text).
    public func contents(_ key: String) -> [[UInt8]] {
        // Most requests carry no content: no key to hash then.
        self.contentStorage.isEmpty ? [] : self.contentStorage[key] ?? []
    }

    /// Whether `key` has content that is not UTF-8, which only a `bytes` parameter can take.
    public func hasUndecodableContent(_ key: String) -> Bool {
        !self.contentStorage.isEmpty && self.contents(key).contains { String(validating: $0, as: UTF8.self) == nil }
    }

    /// Forgets every value of `key`, and that it appeared.
    public mutating func remove(_ key: String) {
        guard self.storage.removeValue(forKey: key) != nil else { return }
        self.contentStorage[key] = nil
        self.lists.remove(key)
        self.keys.removeAll { $0 == key }
    }

    /// Records `key` as present without adding a value.
    public mutating func markPresent(_ key: String) {
        if self.storage[key] == nil {
            self.storage[key] = []
            self.keys.append(key)
        }
    }

    /// Records that `key`'s values came as a list (a JSON array, even of one element or none),
    /// which only a list parameter takes.
    public mutating func markList(_ key: String) {
        self.markPresent(key)
        self.lists.insert(key)
    }

    /// Whether `key`'s values came as a list (``markList(_:)``).
    public func isList(_ key: String) -> Bool {
        !self.lists.isEmpty && self.lists.contains(key)
    }

    /// Appends every value of `other` after this one's.
    public mutating func merge(_ other: RawArguments) {
        for key in other.keys {
            self.markPresent(key)
            self.storage[key]!.append(contentsOf: other[key])
        }
        for (key, contents) in other.contentStorage {
            self.contentStorage[key, default: []].append(contentsOf: contents)
        }
        self.lists.formUnion(other.lists)
    }
}

/// `application/x-www-form-urlencoded` and query-string decoding.
public enum FormURLEncoding {
    /// Parses `a=1&b=x+y&b=%C3%A9&flag` into raw arguments: `+` is a space, `%XX` is a byte
    /// (invalid escapes stay literal), a key without `=` is present with no value, and empty
    /// pieces (`&&`) are skipped.
    /// - Throws: ``ArgumentError/Reason/invalidEncoding`` (a 400 naming the parameter) when a
    ///   decoded key or value is not UTF-8; nothing is replaced or guessed.
    public static func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes) throws(ArgumentError) -> RawArguments {
        var arguments = RawArguments()
        for piece in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = piece.firstIndex(of: UInt8(ascii: "="))
            let keyBytes = piece[piece.startIndex..<(equals ?? piece.endIndex)]
            guard let key = self.validatedText(keyBytes) else {
                throw ArgumentError(.invalidEncoding, parameter: "", value: String(decoding: keyBytes, as: UTF8.self))
            }
            guard let equals else {
                arguments.markPresent(key)
                continue
            }
            let valueBytes = piece[piece.index(after: equals)...]
            guard let value = self.validatedText(valueBytes) else {
                throw ArgumentError(.invalidEncoding, parameter: key, value: String(decoding: valueBytes, as: UTF8.self))
            }
            arguments.append(value, for: key)
        }
        return arguments
    }

    public static func parse(_ text: String) throws(ArgumentError) -> RawArguments {
        try self.parse(Array(text.utf8))
    }

    /// Percent-decodes `bytes` into text, replacing invalid UTF-8 with U+FFFD (for display and
    /// routing; arguments go through ``parse(_:)``, which rejects it); with `plusAsSpace`, `+`
    /// becomes a space (forms, query strings) rather than staying `+` (path segments).
    public static func decode<Bytes: Collection<UInt8>>(_ bytes: Bytes, plusAsSpace: Bool) -> String {
        if !self.hasEscapes(bytes, plusAsSpace: plusAsSpace) { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: self.percentDecoded(bytes, plusAsSpace: plusAsSpace), as: UTF8.self)
    }

    /// A query string's key or value as text (`+` a space), or nil when it is not UTF-8.
    private static func validatedText<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String? {
        // Most keys and values escape nothing: their bytes are the text.
        if !self.hasEscapes(bytes, plusAsSpace: true) { return String(validating: bytes, as: UTF8.self) }
        return String(validating: self.percentDecoded(bytes, plusAsSpace: true), as: UTF8.self)
    }

    /// Whether ``percentDecoded(_:plusAsSpace:)`` would change `bytes`, or might.
    private static func hasEscapes<Bytes: Collection<UInt8>>(_ bytes: Bytes, plusAsSpace: Bool) -> Bool {
        bytes.contains { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }
    }

    /// The bytes `%XX` escapes stand for; invalid escapes stay literal.
    static func percentDecoded<Bytes: Collection<UInt8>>(_ bytes: Bytes, plusAsSpace: Bool) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                let first = bytes.index(after: index)
                if first != bytes.endIndex, bytes.index(after: first) != bytes.endIndex,
                    let high = self.hexValue(bytes[first]), let low = self.hexValue(bytes[bytes.index(after: first)])
                {
                    output.append(high << 4 | low)
                    index = bytes.index(index, offsetBy: 3)
                    continue
                }
                output.append(byte)
            } else if byte == UInt8(ascii: "+") && plusAsSpace {
                output.append(UInt8(ascii: " "))
            } else {
                output.append(byte)
            }
            index = bytes.index(after: index)
        }
        return output
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
