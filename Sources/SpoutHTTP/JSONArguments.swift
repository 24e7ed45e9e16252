/// Reads the arguments of an `application/json` request body.
///
/// The body must be one JSON object. Each member becomes an argument: strings as they are,
/// numbers as written (`12`, `-1.5e3`), booleans as `true`/`false`, `null` as a present key
/// with no value (so a required parameter is still missing), and an array as one value per
/// element (elements must be scalars), marked as a list (``RawArguments/isList(_:)``: only a
/// list parameter takes it). Nested objects and a member named twice are rejected.
enum JSONArguments {
    struct SyntaxError: Error, Sendable, Hashable {
        var reason: String
    }

    /// `expectedMembers`: room made for that many members at once (records of a bulk body
    /// are alike).
    static func parse(_ bytes: [UInt8], expectedMembers: Int = 0) throws(SyntaxError) -> RawArguments {
        var parser = Parser(bytes: bytes)
        parser.skipWhitespace()
        let arguments = try parser.object(expectedMembers: expectedMembers)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw SyntaxError(reason: "trailing characters after the JSON object") }
        return arguments
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipWhitespace() {
            while self.index < self.bytes.count {
                switch self.bytes[self.index] {
                case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): self.index += 1
                default: return
                }
            }
        }

        mutating func expect(_ byte: UInt8) throws(SyntaxError) {
            self.skipWhitespace()
            guard self.index < self.bytes.count, self.bytes[self.index] == byte else {
                throw SyntaxError(reason: "expected '\(Character(Unicode.Scalar(byte)))' in JSON body")
            }
            self.index += 1
        }

        func peek() -> UInt8? {
            self.index < self.bytes.count ? self.bytes[self.index] : nil
        }

        mutating func object(expectedMembers: Int) throws(SyntaxError) -> RawArguments {
            var arguments = RawArguments(capacity: expectedMembers)
            try self.expect(UInt8(ascii: "{"))
            self.skipWhitespace()
            if self.peek() == UInt8(ascii: "}") {
                self.index += 1
                return arguments
            }
            while true {
                self.skipWhitespace()
                guard self.peek() == UInt8(ascii: "\"") else { throw SyntaxError(reason: "expected a member name in JSON body") }
                let key = try self.string()
                // Which of two values was meant cannot be told; taking either would lose the other.
                guard !arguments.contains(key) else { throw SyntaxError(reason: "member '\(key)' appears twice in JSON body") }
                try self.expect(UInt8(ascii: ":"))
                self.skipWhitespace()
                if self.peek() == UInt8(ascii: "[") {
                    self.index += 1
                    arguments.markList(key)
                    self.skipWhitespace()
                    if self.peek() == UInt8(ascii: "]") {
                        self.index += 1
                    } else {
                        while true {
                            if let value = try self.scalar() { arguments.append(value, for: key) }
                            self.skipWhitespace()
                            if self.peek() == UInt8(ascii: ",") {
                                self.index += 1
                                continue
                            }
                            try self.expect(UInt8(ascii: "]"))
                            break
                        }
                    }
                } else if let value = try self.scalar() {
                    arguments.append(value, for: key)
                } else {
                    arguments.markPresent(key)
                }
                self.skipWhitespace()
                if self.peek() == UInt8(ascii: ",") {
                    self.index += 1
                    continue
                }
                try self.expect(UInt8(ascii: "}"))
                return arguments
            }
        }

        /// A string, number, boolean (as text) or null (nil).
        mutating func scalar() throws(SyntaxError) -> String? {
            self.skipWhitespace()
            guard let byte = self.peek() else { throw SyntaxError(reason: "unexpected end of JSON body") }
            switch byte {
            case UInt8(ascii: "\""):
                return try self.string()
            case UInt8(ascii: "t"):
                try self.literal("true")
                return "true"
            case UInt8(ascii: "f"):
                try self.literal("false")
                return "false"
            case UInt8(ascii: "n"):
                try self.literal("null")
                return nil
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return self.number()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                throw SyntaxError(reason: "nested objects and arrays are not supported in JSON body")
            default:
                throw SyntaxError(reason: "invalid value in JSON body")
            }
        }

        mutating func literal(_ word: StaticString) throws(SyntaxError) {
            let count = word.utf8CodeUnitCount
            guard self.index + count <= self.bytes.count,
                word.withUTF8Buffer({ self.bytes[self.index..<(self.index + count)].elementsEqual($0) })
            else { throw SyntaxError(reason: "invalid literal in JSON body") }
            self.index += count
        }

        mutating func number() -> String {
            let start = self.index
            while let byte = self.peek(),
                (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e")
                    || byte == UInt8(ascii: "E")
            {
                self.index += 1
            }
            return String(decoding: self.bytes[start..<self.index], as: UTF8.self)
        }

        mutating func string() throws(SyntaxError) -> String {
            self.index += 1  // opening quote
            // Most strings hold no escape: made straight from their bytes, with no copy first.
            var end = self.index
            while end < self.bytes.count, self.bytes[end] != UInt8(ascii: "\""), self.bytes[end] != UInt8(ascii: "\\") { end += 1 }
            if end < self.bytes.count, self.bytes[end] == UInt8(ascii: "\"") {
                let start = self.index
                let text = self.bytes.withUnsafeBufferPointer { UTF8Text.validated(UnsafeBufferPointer(rebasing: $0[start..<end])) }
                guard let text else {
                    throw SyntaxError(reason: "invalid UTF-8 in JSON body")
                }
                self.index = end + 1
                return text
            }
            var output = Array(self.bytes[self.index..<end])
            self.index = end
            while let byte = self.peek() {
                self.index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = output.withUnsafeBufferPointer(UTF8Text.validated) else {
                        throw SyntaxError(reason: "invalid UTF-8 in JSON body")
                    }
                    return text
                case UInt8(ascii: "\\"):
                    guard let escape = self.peek() else { break }
                    self.index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
                    case UInt8(ascii: "b"): output.append(0x08)
                    case UInt8(ascii: "f"): output.append(0x0C)
                    case UInt8(ascii: "n"): output.append(0x0A)
                    case UInt8(ascii: "r"): output.append(0x0D)
                    case UInt8(ascii: "t"): output.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try self.hex4()
                        if (0xD800..<0xDC00).contains(scalar), self.peek() == UInt8(ascii: "\\"),
                            self.index + 1 < self.bytes.count, self.bytes[self.index + 1] == UInt8(ascii: "u")
                        {
                            self.index += 2
                            let low = try self.hex4()
                            guard (0xDC00..<0xE000).contains(low) else {
                                throw SyntaxError(reason: "unpaired surrogate escape in JSON body")
                            }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let character = Unicode.Scalar(scalar) else {
                            throw SyntaxError(reason: "unpaired surrogate escape in JSON body")
                        }
                        output.append(contentsOf: String(Character(character)).utf8)
                    default:
                        throw SyntaxError(reason: "invalid escape in JSON body")
                    }
                default:
                    output.append(byte)
                }
            }
            throw SyntaxError(reason: "unterminated string in JSON body")
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard self.index + 4 <= self.bytes.count else { throw SyntaxError(reason: "invalid escape in JSON body") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = self.bytes[self.index]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw SyntaxError(reason: "invalid escape in JSON body")
                }
                value = value << 4 | digit
                self.index += 1
            }
            return value
        }
    }
}
