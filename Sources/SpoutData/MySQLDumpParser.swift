import SpoutCore

/// A streaming parser for MySQL dump files (`mysqldump` output, test_db's `load_*.dump`).
///
/// It reads the file in fixed-size blocks (constant memory, whatever the file size) and yields
/// the rows of every `INSERT` statement, one at a time:
///
/// ```swift
/// let parser = try MySQLDumpParser(contentsOfFile: "load_employees.dump")
/// while try parser.nextRow() {
///     print(parser.table, parser.values)
/// }
/// ```
///
/// Understood:
/// - `INSERT [LOW_PRIORITY | DELAYED | HIGH_PRIORITY] [IGNORE] [INTO] table [(columns)]
///   VALUES (...), (...), ...;` and `REPLACE [INTO] ...` with any whitespace, blank lines and
///   comments between tokens; `table` bare, `` `backquoted` `` or qualified (`` `db`.`t` ``);
/// - single- and double-quoted strings with MySQL backslash escapes: `\0` (NUL), `\'`, `\"`,
///   `\b` (backspace), `\n`, `\r`, `\t`, `\Z` (Ctrl-Z, 0x1A), `\\`; `\%` and `\_` stay two
///   characters (`\%`, `\_`), as in MySQL outside LIKE patterns; a backslash before any other
///   character is dropped; a doubled quote (`''` in `'...'`) is one quote;
/// - `NULL`, `TRUE`, `FALSE` (any case), integers, decimals (`-12.50`) and numbers with an exponent;
/// - `-- ` (dashes followed by a space, control character or end of line), `#` and `/* ... */`
///   comments, including MySQL's `/*!50503 ... */` (skipped);
/// - every other statement (`SET`, `LOCK TABLES`, `CREATE TABLE`, ...) is skipped up to its
///   `;`, respecting quotes and comments.
///
/// Errors are ``DataFileError``s with the file, line and column: an unterminated string,
/// identifier or comment; a row or INSERT cut off by the end of the file; a row whose value
/// count differs from its column list, from ``expectedColumnCounts`` or, without either, from
/// the first row of its statement; an unexpected character. After an error the parser must
/// not be used further.
///
/// The parser is not thread-safe; use it from one thread at a time.
public final class MySQLDumpParser {
    private var core: DumpParserCore

    /// Opens `path`; it is read in blocks of `blockSize` bytes as parsing goes.
    public init(contentsOfFile path: String, blockSize: Int = 256 * 1024) throws {
        self.core = DumpParserCore(reader: try BlockReader(path: path, blockSize: blockSize))
    }

    /// Parses `bytes` held in memory; `name` stands for the file in errors.
    public init(bytes: [UInt8], name: String = "<memory>") {
        self.core = DumpParserCore(reader: BlockReader(bytes: bytes, name: name))
    }

    /// Parses `text` held in memory; `name` stands for the file in errors.
    public convenience init(text: String, name: String = "<memory>") {
        self.init(bytes: Array(text.utf8), name: name)
    }

    deinit {
        self.core.reader.release()
    }

    /// The table of the current row.
    public var table: String { self.core.table }
    /// The column list of the current row's INSERT, when it has one.
    public var columnNames: [String]? { self.core.columnNames }
    /// The values of the current row (see ``DumpRow/values``). Valid until the next call to
    /// ``nextRow()``.
    public var values: [SQLValue] { self.core.values }
    /// Where the current row's `(` is.
    public var rowPosition: SourcePosition { self.core.rowPosition }
    /// Rows returned so far.
    public var rowsRead: Int { self.core.rowsRead }
    /// The number of values each row of a table must have, keyed by lowercased table name.
    /// Rows of tables not listed must match their column list or their statement's first row.
    public var expectedColumnCounts: [String: Int] {
        get { self.core.expectedColumnCounts }
        set { self.core.expectedColumnCounts = newValue }
    }

    /// The path or name given at creation, used in errors.
    public var file: String { self.core.reader.path }
    /// Bytes parsed so far.
    public var bytesRead: Int64 { self.core.reader.consumedBytes }
    /// The size of the input in bytes.
    public var bytesTotal: Int64 { self.core.reader.totalBytes }

    /// Closes the file. Idempotent; ``nextRow()`` then reports the end of the input.
    public func close() {
        self.core.reader.close()
    }

    /// Where the value at `index` of the current row starts.
    public func position(ofValue index: Int) -> SourcePosition {
        self.core.valuePositions[index]
    }

    /// The current row as a value.
    public var currentRow: DumpRow {
        DumpRow(table: self.core.table, values: self.core.values, position: self.core.rowPosition)
    }

    /// Reads the next row and returns it, or nil at the end of the file.
    public func next() throws -> DumpRow? {
        try self.nextRow() ? self.currentRow : nil
    }

    /// Advances to the next row: returns `true` and sets ``table``, ``values`` and
    /// ``rowPosition``, or returns `false` at the end of the file.
    public func nextRow() throws -> Bool {
        try self.core.nextRow()
    }
}

/// The parser's state and logic. A struct, so that its per-byte work runs on `inout self`
/// without dynamic exclusivity checks; ``MySQLDumpParser`` is the public, reference-typed face.
struct DumpParserCore {
    /// The table of the current row.
    var table = ""
    /// The column list of the current row's INSERT, when it has one.
    var columnNames: [String]?
    /// The values of the current row (see ``DumpRow/values``). Valid until the next call to
    /// ``nextRow()``.
    var values: [SQLValue] = []
    /// Where the current row's `(` is.
    var rowPosition = SourcePosition(line: 0, column: 0)
    /// Rows returned so far.
    var rowsRead = 0
    /// The number of values each row of a table must have, keyed by lowercased table name.
    /// Rows of tables not listed must match their column list or their statement's first row.
    var expectedColumnCounts: [String: Int] = [:]

    var reader: BlockReader
    var valuePositions: [SourcePosition] = []
    /// Whether the reader is inside the VALUES list of an INSERT, after a row.
    private var inValues = false
    /// The value count every row of the current statement must have.
    private var statementColumnCount: Int?
    private var scratch: [UInt8] = []

    init(reader: BlockReader) {
        self.reader = reader
        self.scratch.reserveCapacity(256)
    }

    /// Advances to the next row: returns `true` and sets ``table``, ``values`` and
    /// ``rowPosition``, or returns `false` at the end of the file.
    mutating func nextRow() throws -> Bool {
        if self.inValues {
            try self.skipTrivia()
            guard let byte = try self.reader.peek() else {
                throw self.error(.truncatedStatement, at: self.reader.position)
            }
            switch byte {
            case UInt8(ascii: ","):
                self.reader.advance()
                try self.skipTrivia()
                try self.expectRowStart()
                try self.parseRow()
                return true
            case UInt8(ascii: ";"):
                self.reader.advance()
                self.inValues = false
            default:
                throw self.unexpected(byte, expected: "',' or ';' after a row")
            }
        }
        while true {
            try self.skipTrivia()
            guard let byte = try self.reader.peek() else { return false }
            if byte == UInt8(ascii: ";") {
                self.reader.advance()
                continue
            }
            if Self.isWordByte(byte) {
                let word = try self.readWord().uppercased()
                if word == "INSERT" || word == "REPLACE" {
                    try self.parseInsertHeader()
                    try self.parseRow()
                    return true
                }
            }
            try self.skipStatement()
        }
    }

    // MARK: - Statements

    /// Parses `[modifiers] [INTO] table [(columns)] VALUES` and stops before the first `(`.
    private mutating func parseInsertHeader() throws {
        var word: String?
        while true {
            try self.skipTrivia()
            guard let byte = try self.reader.peek() else {
                throw self.error(.truncatedStatement, at: self.reader.position)
            }
            guard Self.isWordByte(byte) else { break }
            let text = try self.readWord()
            if ["LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO"].contains(text.uppercased()) {
                continue
            }
            word = text
            break
        }
        let table: String
        if let word {
            table = try self.readQualifiedName(first: word)
        } else if try self.reader.peek() == UInt8(ascii: "`") {
            table = try self.readQualifiedName(first: try self.readBackquoted())
        } else {
            let byte = try self.reader.peek() ?? 0
            throw self.unexpected(byte, expected: "a table name")
        }
        self.table = table
        self.columnNames = nil
        try self.skipTrivia()
        guard var byte = try self.reader.peek() else {
            throw self.error(.truncatedStatement, at: self.reader.position)
        }
        if byte == UInt8(ascii: "(") {
            self.columnNames = try self.parseColumnList()
            try self.skipTrivia()
            guard let next = try self.reader.peek() else {
                throw self.error(.truncatedStatement, at: self.reader.position)
            }
            byte = next
        }
        let keywordPosition = self.reader.position
        guard Self.isWordByte(byte), ["VALUES", "VALUE"].contains(try self.readWord().uppercased()) else {
            throw self.error(
                .unexpectedCharacter(found: Self.describe(byte), expected: "VALUES (INSERT ... SELECT and INSERT ... SET are not supported)"),
                at: keywordPosition)
        }
        if let columnNames = self.columnNames {
            self.statementColumnCount = columnNames.count
        } else {
            self.statementColumnCount = self.expectedColumnCounts[table.lowercased()]
        }
        self.inValues = true
        try self.skipTrivia()
        try self.expectRowStart()
    }

    /// Reads `.name` parts after a first name part and returns the last one.
    private mutating func readQualifiedName(first: String) throws -> String {
        var name = first
        while try self.reader.peek() == UInt8(ascii: ".") {
            self.reader.advance()
            guard let byte = try self.reader.peek() else {
                throw self.error(.truncatedStatement, at: self.reader.position)
            }
            if byte == UInt8(ascii: "`") {
                name = try self.readBackquoted()
            } else if Self.isWordByte(byte) {
                name = try self.readWord()
            } else {
                throw self.unexpected(byte, expected: "a table name after '.'")
            }
        }
        return name
    }

    /// Parses `(name, name, ...)`, starting at the `(`.
    private mutating func parseColumnList() throws -> [String] {
        self.reader.advance()
        var names: [String] = []
        while true {
            try self.skipTrivia()
            guard let byte = try self.reader.peek() else {
                throw self.error(.truncatedStatement, at: self.reader.position)
            }
            if byte == UInt8(ascii: "`") {
                names.append(try self.readBackquoted())
            } else if Self.isWordByte(byte) {
                names.append(try self.readWord())
            } else {
                throw self.unexpected(byte, expected: "a column name")
            }
            try self.skipTrivia()
            guard let separator = try self.reader.peek() else {
                throw self.error(.truncatedStatement, at: self.reader.position)
            }
            self.reader.advance()
            if separator == UInt8(ascii: ")") { return names }
            if separator != UInt8(ascii: ",") {
                throw self.error(
                    .unexpectedCharacter(found: Self.describe(separator), expected: "',' or ')' in the column list"),
                    at: SourcePosition(line: self.reader.line, column: self.reader.column - 1))
            }
        }
    }

    /// Skips a statement that is not an INSERT, up to and including its `;` (or the end of
    /// the file).
    private mutating func skipStatement() throws {
        while let byte = try self.reader.peek() {
            switch byte {
            case UInt8(ascii: ";"):
                self.reader.advance()
                return
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                try self.skipQuoted(quote: byte, escapes: true, reason: .unterminatedString)
            case UInt8(ascii: "`"):
                try self.skipQuoted(quote: byte, escapes: false, reason: .unterminatedIdentifier)
            default:
                if try !self.skipComment() {
                    self.reader.advance()
                }
            }
        }
    }

    private mutating func skipQuoted(quote: UInt8, escapes: Bool, reason: DataFileError.Reason) throws {
        let start = self.reader.position
        self.reader.advance()
        while true {
            guard let byte = try self.reader.peek() else { throw self.error(reason, at: start) }
            self.reader.advance()
            if byte == quote {
                if try self.reader.peek() == quote {
                    self.reader.advance()
                    continue
                }
                return
            }
            if escapes && byte == UInt8(ascii: "\\") {
                guard try self.reader.peek() != nil else { throw self.error(reason, at: start) }
                self.reader.advance()
            }
        }
    }

    // MARK: - Rows and values

    private mutating func expectRowStart() throws {
        guard let byte = try self.reader.peek() else {
            throw self.error(.truncatedStatement, at: self.reader.position)
        }
        guard byte == UInt8(ascii: "(") else {
            throw self.unexpected(byte, expected: "'(' to start a row")
        }
    }

    /// Parses `( value, ... )`, starting at the `(`.
    private mutating func parseRow() throws {
        let rowStart = self.reader.position
        self.rowPosition = rowStart
        self.reader.advance()
        self.values.removeAll(keepingCapacity: true)
        self.valuePositions.removeAll(keepingCapacity: true)
        try self.skipTrivia()
        guard let first = try self.reader.peek() else { throw self.error(.truncatedRow, at: rowStart) }
        if first == UInt8(ascii: ")") {
            self.reader.advance()
        } else {
            while true {
                try self.skipTrivia()
                guard try self.reader.peek() != nil else { throw self.error(.truncatedRow, at: rowStart) }
                self.valuePositions.append(self.reader.position)
                self.values.append(try self.parseValue(rowStart: rowStart))
                try self.skipTrivia()
                guard let byte = try self.reader.peek() else { throw self.error(.truncatedRow, at: rowStart) }
                if byte == UInt8(ascii: ",") {
                    self.reader.advance()
                } else if byte == UInt8(ascii: ")") {
                    self.reader.advance()
                    break
                } else {
                    throw self.unexpected(byte, expected: "',' or ')' after a value")
                }
            }
        }
        if let expected = self.statementColumnCount {
            guard self.values.count == expected else {
                throw self.error(.wrongColumnCount(expected: expected, found: self.values.count), at: rowStart)
            }
        } else {
            self.statementColumnCount = self.values.count
        }
        self.rowsRead += 1
    }

    private mutating func parseValue(rowStart: SourcePosition) throws -> SQLValue {
        guard let byte = try self.reader.peek() else { throw self.error(.truncatedRow, at: rowStart) }
        switch byte {
        case UInt8(ascii: "'"), UInt8(ascii: "\""):
            return .text(try self.readString(quote: byte))
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."):
            return try self.readNumber()
        default:
            guard Self.isWordByte(byte) else {
                throw self.unexpected(byte, expected: "a value")
            }
            let start = self.reader.position
            let word = try self.readWord()
            switch word.uppercased() {
            case "NULL": return .null
            case "TRUE": return .integer(1)
            case "FALSE": return .integer(0)
            default:
                throw self.error(.unexpectedCharacter(found: "'\(word)'", expected: "a value"), at: start)
            }
        }
    }

    /// Reads a quoted string starting at its opening quote and returns its content.
    private mutating func readString(quote: UInt8) throws -> String {
        let start = self.reader.position
        self.reader.advance()
        self.scratch.removeAll(keepingCapacity: true)
        while true {
            guard let byte = try self.reader.peek() else { throw self.error(.unterminatedString, at: start) }
            self.reader.advance()
            if byte == quote {
                if try self.reader.peek() == quote {
                    self.reader.advance()
                    self.scratch.append(quote)
                    continue
                }
                return String(decoding: self.scratch, as: UTF8.self)
            }
            if byte != UInt8(ascii: "\\") {
                self.scratch.append(byte)
                continue
            }
            guard let escaped = try self.reader.peek() else { throw self.error(.unterminatedString, at: start) }
            self.reader.advance()
            switch escaped {
            case UInt8(ascii: "0"): self.scratch.append(0)
            case UInt8(ascii: "b"): self.scratch.append(0x08)
            case UInt8(ascii: "n"): self.scratch.append(UInt8(ascii: "\n"))
            case UInt8(ascii: "r"): self.scratch.append(UInt8(ascii: "\r"))
            case UInt8(ascii: "t"): self.scratch.append(UInt8(ascii: "\t"))
            case UInt8(ascii: "Z"): self.scratch.append(0x1A)
            case UInt8(ascii: "%"), UInt8(ascii: "_"):
                self.scratch.append(UInt8(ascii: "\\"))
                self.scratch.append(escaped)
            default:
                // \\, \', \" and any other escaped character stand for that character.
                self.scratch.append(escaped)
            }
        }
    }

    /// Reads `[+-]digits[.digits][e[+-]digits]` (at least one digit).
    private mutating func readNumber() throws -> SQLValue {
        let start = self.reader.position
        self.scratch.removeAll(keepingCapacity: true)
        var negative = false
        if let sign = try self.reader.peek(), sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
            negative = sign == UInt8(ascii: "-")
            self.reader.advance()
            if negative { self.scratch.append(sign) }
        }
        var integer: Int64 = 0
        var overflow = false
        var digits = 0
        while let byte = try self.reader.peek(), Self.isDigit(byte) {
            self.reader.advance()
            self.scratch.append(byte)
            digits += 1
            let digit = Int64(byte &- UInt8(ascii: "0"))
            let (times10, overflow1) = integer.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
            overflow = overflow || overflow1 || overflow2
            integer = sum
        }
        var isDecimal = false
        var fractionDigits = 0
        if try self.reader.peek() == UInt8(ascii: ".") {
            self.reader.advance()
            isDecimal = true
            if digits == 0 { self.scratch.append(UInt8(ascii: "0")) }
            self.scratch.append(UInt8(ascii: "."))
            while let byte = try self.reader.peek(), Self.isDigit(byte) {
                self.reader.advance()
                self.scratch.append(byte)
                fractionDigits += 1
            }
        }
        guard digits + fractionDigits > 0 else {
            throw self.error(.unexpectedCharacter(found: "'\(String(decoding: self.scratch, as: UTF8.self))'", expected: "a number"), at: start)
        }
        if isDecimal && fractionDigits == 0 {
            self.scratch.removeLast()  // "12." is 12
            isDecimal = false
        }
        if let marker = try self.reader.peek(), marker == UInt8(ascii: "e") || marker == UInt8(ascii: "E") {
            self.reader.advance()
            self.scratch.append(UInt8(ascii: "e"))
            if let sign = try self.reader.peek(), sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
                self.reader.advance()
                self.scratch.append(sign)
            }
            var exponentDigits = 0
            while let byte = try self.reader.peek(), Self.isDigit(byte) {
                self.reader.advance()
                self.scratch.append(byte)
                exponentDigits += 1
            }
            let text = String(decoding: self.scratch, as: UTF8.self)
            guard exponentDigits > 0, let value = Double(text) else {
                throw self.error(.unexpectedCharacter(found: "'\(text)'", expected: "a number"), at: start)
            }
            return .double(value)
        }
        if isDecimal || overflow {
            return .decimal(String(decoding: self.scratch, as: UTF8.self))
        }
        return .integer(integer)
    }

    // MARK: - Lexical helpers

    /// Reads a bare word (letters, digits, `_`, `$`, non-ASCII bytes).
    private mutating func readWord() throws -> String {
        self.scratch.removeAll(keepingCapacity: true)
        while let byte = try self.reader.peek(), Self.isWordByte(byte) {
            self.scratch.append(byte)
            self.reader.advance()
        }
        return String(decoding: self.scratch, as: UTF8.self)
    }

    /// Reads a `` `backquoted` `` identifier (a doubled backquote is one backquote).
    private mutating func readBackquoted() throws -> String {
        let start = self.reader.position
        self.reader.advance()
        self.scratch.removeAll(keepingCapacity: true)
        while true {
            guard let byte = try self.reader.peek() else { throw self.error(.unterminatedIdentifier, at: start) }
            self.reader.advance()
            if byte == UInt8(ascii: "`") {
                if try self.reader.peek() == UInt8(ascii: "`") {
                    self.reader.advance()
                    self.scratch.append(byte)
                    continue
                }
                return String(decoding: self.scratch, as: UTF8.self)
            }
            self.scratch.append(byte)
        }
    }

    /// Skips whitespace and comments.
    private mutating func skipTrivia() throws {
        while let byte = try self.reader.peek() {
            if Self.isSpace(byte) {
                self.reader.advance()
            } else if try !self.skipComment() {
                return
            }
        }
    }

    /// Skips one comment if the input is at one; returns whether it did.
    private mutating func skipComment() throws -> Bool {
        guard let byte = try self.reader.peek() else { return false }
        switch byte {
        case UInt8(ascii: "#"):
            try self.skipToEndOfLine()
            return true
        case UInt8(ascii: "-"):
            guard try self.reader.peek(ahead: 1) == UInt8(ascii: "-") else { return false }
            if let after = try self.reader.peek(ahead: 2), after > 0x20 { return false }
            try self.skipToEndOfLine()
            return true
        case UInt8(ascii: "/"):
            guard try self.reader.peek(ahead: 1) == UInt8(ascii: "*") else { return false }
            let start = self.reader.position
            self.reader.advance()
            self.reader.advance()
            while true {
                guard let next = try self.reader.peek() else { throw self.error(.unterminatedComment, at: start) }
                self.reader.advance()
                if next == UInt8(ascii: "*"), try self.reader.peek() == UInt8(ascii: "/") {
                    self.reader.advance()
                    return true
                }
            }
        default:
            return false
        }
    }

    private mutating func skipToEndOfLine() throws {
        while let byte = try self.reader.peek() {
            self.reader.advance()
            if byte == UInt8(ascii: "\n") { return }
        }
    }

    private func error(_ reason: DataFileError.Reason, at position: SourcePosition) -> DataFileError {
        DataFileError(file: self.reader.path, position: position, reason: reason)
    }

    /// An unexpected-character error at the next byte.
    private func unexpected(_ byte: UInt8, expected: String) -> DataFileError {
        self.error(.unexpectedCharacter(found: Self.describe(byte), expected: expected), at: self.reader.position)
    }

    /// `'x'` for printable ASCII, a name for common control characters, `byte 0xNN` otherwise.
    static func describe(_ byte: UInt8) -> String {
        switch byte {
        case 0x21...0x7E: return "'\(Character(Unicode.Scalar(byte)))'"
        case UInt8(ascii: " "): return "space"
        case UInt8(ascii: "\n"): return "end of line"
        case UInt8(ascii: "\t"): return "tab"
        default:
            let hex = String(byte, radix: 16, uppercase: true)
            return "byte 0x" + (hex.count == 1 ? "0" + hex : hex)
        }
    }

    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    @inline(__always)
    static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || (byte >= 0x09 && byte <= 0x0D)
    }

    @inline(__always)
    static func isWordByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || Self.isDigit(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$") || byte >= 0x80
    }
}
