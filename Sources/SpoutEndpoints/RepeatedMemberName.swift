import SpoutCore

/// Finds a member name that one JSON object holds twice, at any depth.
///
/// JSON decoders disagree on `{"sub":"Harold","sub":"Gwen"}` (Foundation keeps the first, many
/// keep the last), so a token carrying it means one thing to Spout and another to a gateway or
/// a log reader; RFC 7515 §4 lets a verifier refuse it, and the verifier does.
///
/// Contract: names are compared after their escapes are decoded (`"s\u0075b"` is `sub`). Text
/// that is not JSON, or nests deeper than ``maximumDepth``, yields nil: deciding that it is
/// malformed is the decoder's job, which runs next.
struct RepeatedMemberName {
    static let maximumDepth = 64

    private let bytes: [UInt8]
    private var index = 0

    /// The first name some object of `json` holds twice, or nil.
    static func find(in json: [UInt8]) -> String? {
        var scanner = RepeatedMemberName(bytes: json)
        guard case .repeated(let name)? = scanner.value(depth: 0) else { return nil }
        return name
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// What scanning a value found: nothing wrong, or a repeated name. Nil: not JSON.
    private enum Outcome {
        case fine
        case repeated(String)
    }

    private mutating func value(depth: Int) -> Outcome? {
        guard depth < Self.maximumDepth else { return nil }
        self.skipBlanks()
        guard self.index < self.bytes.count else { return nil }
        switch self.bytes[self.index] {
        case UInt8(ascii: "{"): return self.object(depth: depth)
        case UInt8(ascii: "["): return self.array(depth: depth)
        case UInt8(ascii: "\""): return self.string() == nil ? nil : .fine
        default:
            // A number or a literal: its bytes up to the next delimiter.
            let start = self.index
            while self.index < self.bytes.count, !Self.isDelimiter(self.bytes[self.index]) { self.index += 1 }
            return self.index > start ? .fine : nil
        }
    }

    private mutating func object(depth: Int) -> Outcome? {
        self.index += 1
        var names: Set<String> = []
        self.skipBlanks()
        if self.consume(UInt8(ascii: "}")) { return .fine }
        while true {
            self.skipBlanks()
            guard let name = self.string() else { return nil }
            guard names.insert(name).inserted else { return .repeated(name) }
            self.skipBlanks()
            guard self.consume(UInt8(ascii: ":")) else { return nil }
            switch self.value(depth: depth + 1) {
            case nil: return nil
            case .repeated(let inner)?: return .repeated(inner)
            case .fine?: break
            }
            self.skipBlanks()
            if self.consume(UInt8(ascii: "}")) { return .fine }
            guard self.consume(UInt8(ascii: ",")) else { return nil }
        }
    }

    private mutating func array(depth: Int) -> Outcome? {
        self.index += 1
        self.skipBlanks()
        if self.consume(UInt8(ascii: "]")) { return .fine }
        while true {
            switch self.value(depth: depth + 1) {
            case nil: return nil
            case .repeated(let inner)?: return .repeated(inner)
            case .fine?: break
            }
            self.skipBlanks()
            if self.consume(UInt8(ascii: "]")) { return .fine }
            guard self.consume(UInt8(ascii: ",")) else { return nil }
        }
    }

    /// A string's decoded text (``SpoutCore/JSONStringLiteral``); nil when it is not one.
    private mutating func string() -> String? {
        JSONStringLiteral.read(self.bytes, at: &self.index)
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard self.index < self.bytes.count, self.bytes[self.index] == byte else { return false }
        self.index += 1
        return true
    }

    private mutating func skipBlanks() {
        while self.index < self.bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(self.bytes[self.index]) { self.index += 1 }
    }

    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") || [0x20, 0x09, 0x0A, 0x0D].contains(byte)
    }
}
