/// Splits a JSON array of objects into records, a byte at a time: `[{"a":1},{"a":2}]` is two
/// records, at index 0 and 1. Each object's bytes are collected (at most `maximumRecordSize`)
/// and read by ``JSONArguments`` as a single write's JSON body is; an element that is not an
/// object, or anything but blanks after the closing bracket, is refused naming the index.
struct JSONArrayRecordSplitter: Sendable {
    private enum State: Sendable {
        /// Before the opening bracket.
        case start
        /// After `[` or `,`: an element must come (or, after `[` only, `]`).
        case elementExpected(afterComma: Bool)
        /// Inside an object.
        case inElement
        /// After an element: `,` or `]`.
        case afterElement
        /// After `]`: only blanks.
        case done
    }

    private let maximumRecordSize: Int
    private var state = State.start
    private var record: [UInt8] = []
    private var index = 0
    /// The members of the last record: room made for as many in the next.
    private var lastMemberCount = 0
    /// Depth of objects and arrays within the current element.
    private var depth = 0
    private var inString = false
    private var escaped = false

    init(maximumRecordSize: Int) {
        self.maximumRecordSize = maximumRecordSize
    }

    /// Takes the next byte; returns the record it completes, if any.
    mutating func take(_ byte: UInt8) throws(BulkRecordError) -> BulkRecord? {
        switch self.state {
        case .inElement:
            return try self.element(byte)
        case .start:
            if Self.isBlank(byte) { return nil }
            guard byte == UInt8(ascii: "[") else {
                throw .malformed("a bulk JSON body must be an array of objects", at: .index(0))
            }
            self.state = .elementExpected(afterComma: false)
        case .elementExpected(let afterComma):
            if Self.isBlank(byte) { return nil }
            if byte == UInt8(ascii: "]") && !afterComma {
                self.state = .done
                return nil
            }
            guard byte == UInt8(ascii: "{") else { throw .malformed("expected an object", at: .index(self.index)) }
            self.state = .inElement
            return try self.element(byte)
        case .afterElement:
            if Self.isBlank(byte) { return nil }
            if byte == UInt8(ascii: ",") {
                self.state = .elementExpected(afterComma: true)
            } else if byte == UInt8(ascii: "]") {
                self.state = .done
            } else {
                throw .malformed("expected ',' or ']' after the object", at: .index(self.index))
            }
        case .done:
            if !Self.isBlank(byte) { throw .malformed("trailing characters after the JSON array", at: .index(self.index)) }
        }
        return nil
    }

    /// The body ended: refused unless the array closed.
    mutating func finish() throws(BulkRecordError) -> BulkRecord? {
        guard case .done = self.state else {
            throw .malformed("the JSON array ends early", at: .index(self.index))
        }
        return nil
    }

    private mutating func element(_ byte: UInt8) throws(BulkRecordError) -> BulkRecord? {
        guard self.record.count < self.maximumRecordSize else {
            throw .malformed("record larger than \(self.maximumRecordSize) bytes", at: .index(self.index))
        }
        self.record.append(byte)
        if self.inString {
            if self.escaped {
                self.escaped = false
            } else if byte == UInt8(ascii: "\\") {
                self.escaped = true
            } else if byte == UInt8(ascii: "\"") {
                self.inString = false
            }
            return nil
        }
        switch byte {
        case UInt8(ascii: "\""):
            self.inString = true
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            self.depth += 1
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            self.depth -= 1
            if self.depth == 0 { return try self.completed() }
        default:
            break
        }
        return nil
    }

    private mutating func completed() throws(BulkRecordError) -> BulkRecord {
        let position = BulkPosition.index(self.index)
        defer {
            self.record.removeAll(keepingCapacity: true)
            self.index += 1
            self.state = .afterElement
        }
        do {
            let arguments = try JSONArguments.parse(self.record, expectedMembers: self.lastMemberCount)
            self.lastMemberCount = arguments.keys.count
            return BulkRecord(arguments: arguments, position: position)
        } catch {
            throw .malformed(error.reason, at: position)
        }
    }

    static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\t")
    }
}
