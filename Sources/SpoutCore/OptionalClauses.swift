/// The optional filters of a statement: parenthesised groups written
/// `(:p IS NULL OR predicate)`, which Spout reduces before preparing, so that each database
/// plans only the predicates of the parameters a request gives.
///
/// A group is recognised when its first tokens are the parameter, `IS NULL OR`; the parameter
/// may be cast, as PostgreSQL needs when `:p` appears only there: `CAST(:p AS type)` or
/// `:p::type`. The predicate is everything after that `OR` up to the group's closing
/// parenthesis. The statement is read as ``SQLLexer``'s tokens, so nothing in a comment,
/// string or quoted identifier counts, and `:claims.sub` is one parameter.
///
/// Reducing a group never changes the statement's meaning, whatever surrounds it: with `:p`
/// NULL the group is TRUE, so it becomes `(1 = 1)`; with `:p` not NULL it is
/// `FALSE OR predicate`, which is the predicate in SQL's three-valued logic, so it becomes
/// `(predicate)`. A list argument (an array) keeps the group as written.
///
/// Refused, with the offset of the problem (``OptionalClauseError``): `:p IS NULL OR` that
/// does not open a parenthesised group of its own (`WHERE :p IS NULL OR x`, or
/// `(a AND :p IS NULL OR x)`: which part to keep would depend on precedence), a group inside
/// another group's predicate, a group with an empty predicate, and more than
/// ``maximumCount`` groups in one statement (each combination of given parameters is a
/// statement of its own, prepared on every connection).
public struct OptionalClauses: Sendable, Hashable {
    /// The most optional clauses one statement may have: 2⁶ = 64 statements at most.
    public static let maximumCount = 6

    /// One `(:p IS NULL OR predicate)` group.
    public struct Clause: Sendable, Hashable {
        /// The parameter whose absence (NULL) makes the group TRUE.
        public let parameter: String
        /// The UTF-8 byte range of the group in the source, parentheses included.
        public let group: Range<Int>
        /// The UTF-8 byte range of the predicate: its first token up to the closing parenthesis.
        public let predicate: Range<Int>
    }

    /// What a request's argument makes of a clause.
    public enum Choice: UInt8, Sendable, Hashable {
        /// The argument is NULL: the group is `(1 = 1)`.
        case absent
        /// The argument is a value: the group is `(predicate)`.
        case present
        /// The argument is a list, or there is none: the group stays as written.
        case asWritten

        /// The choice `value` makes.
        public init(_ value: SQLValue?) {
            switch value {
            case .null?: self = .absent
            case .array?, nil: self = .asWritten
            default: self = .present
            }
        }
    }

    /// The SQL as written.
    public let source: String
    /// The clauses in source order; they never overlap.
    public let clauses: [Clause]

    /// Finds the optional clauses of `source`. Throws ``OptionalClauseError`` for the refused
    /// forms (see the type) and for unterminated strings, identifiers or comments.
    public init(_ source: String) throws(OptionalClauseError) {
        let tokens = try CodeTokens(source)
        let bytes = tokens.bytes
        var clauses: [Clause] = []
        var heads = Set<Int>()
        for (index, token) in tokens.code.enumerated() where token.kind == .openParenthesis {
            guard let head = tokens.nullTest(at: index + 1) else { continue }
            heads.insert(index + 1)
            guard let close = tokens.matchingClose[index] else {
                throw OptionalClauseError(bytes: bytes, offset: token.range.lowerBound, reason: "unbalanced parentheses")
            }
            let first = head.orIndex + 1
            guard first < close else {
                throw OptionalClauseError(
                    bytes: bytes, offset: tokens.code[head.orIndex].range.lowerBound,
                    reason: "the optional clause of :\(head.parameter) has nothing after OR")
            }
            let group = token.range.lowerBound..<tokens.code[close].range.upperBound
            if let outer = clauses.last, outer.group.upperBound > group.lowerBound {
                throw OptionalClauseError(
                    bytes: bytes, offset: token.range.lowerBound,
                    reason: "the optional clause of :\(head.parameter) is inside the optional clause of :\(outer.parameter); "
                        + "write them side by side, joined by AND")
            }
            clauses.append(
                Clause(
                    parameter: head.parameter, group: group,
                    predicate: tokens.code[first].range.lowerBound..<tokens.code[close].range.lowerBound))
        }
        for index in tokens.code.indices where !heads.contains(index) {
            guard let stray = tokens.nullTest(at: index) else { continue }
            throw OptionalClauseError(
                bytes: bytes, offset: tokens.code[index].range.lowerBound,
                reason: "':\(stray.parameter) IS NULL OR' must open parentheses of its own: write (:\(stray.parameter) IS NULL OR predicate)")
        }
        if clauses.count > Self.maximumCount {
            throw OptionalClauseError(
                bytes: bytes, offset: clauses[Self.maximumCount].group.lowerBound,
                reason: "more than \(Self.maximumCount) optional clauses (each combination is a statement of its own); "
                    + "split the endpoint")
        }
        self.source = source
        self.clauses = clauses
    }

    /// The words of `clause`'s predicate (``SQLToken/Kind/word``), upper-cased: its column
    /// names (a qualified `e.last_name` gives `E` and `LAST_NAME`) and keywords, not its
    /// parameters, strings or quoted identifiers. For telling which columns a filter tests.
    public func words(of clause: Clause) -> Set<String> {
        var lexer = SQLLexer(bytes: Array(Array(self.source.utf8)[clause.predicate]))
        var words = Set<String>()
        do {
            while let token = try lexer.next() {
                if token.kind == .word { words.insert(token.text(in: lexer.bytes).uppercased()) }
            }
        } catch {
            return []
        }
        return words
    }

    /// The choice each clause gets from `arguments`, in clause order.
    public func choices(for arguments: [String: SQLValue]) -> [Choice] {
        self.clauses.map { Choice(arguments[$0.parameter]) }
    }

    /// The source with each clause reduced as `choices` (one per clause, in order) says.
    public func rendered(_ choices: [Choice]) -> String {
        precondition(choices.count == self.clauses.count, "one choice per clause")
        let bytes = Array(self.source.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var position = 0
        for (clause, choice) in zip(self.clauses, choices) {
            switch choice {
            case .asWritten:
                continue
            case .absent:
                output += bytes[position..<clause.group.lowerBound]
                output += Array("(1 = 1)".utf8)
            case .present:
                output += bytes[position..<clause.group.lowerBound]
                output.append(UInt8(ascii: "("))
                output += bytes[clause.predicate]
                output.append(UInt8(ascii: ")"))
            }
            position = clause.group.upperBound
        }
        output += bytes[position...]
        return String(decoding: output, as: UTF8.self)
    }
}

/// An optional clause Spout cannot reduce, or SQL it cannot read.
public struct OptionalClauseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The UTF-8 byte offset of the problem (0-based).
    public let offset: Int
    /// 1-based line and column (in UTF-8 bytes) of ``offset``.
    public let line: Int
    public let column: Int
    public let reason: String

    init(bytes: [UInt8], offset: Int, reason: String) {
        self.offset = offset
        (self.line, self.column) = SQLSyntaxError.lineAndColumn(of: offset, in: bytes)
        self.reason = reason
    }

    public var description: String { "\(self.reason) (line \(self.line), column \(self.column))" }
}

/// The code of SQL text as ``OptionalClauses`` reads it: ``SQLLexer``'s tokens without
/// whitespace and comments, and the `)` that closes each `(`.
private struct CodeTokens {
    /// `PARAMETER IS NULL OR` found by ``nullTest(at:)``: the parameter and the index of `OR`.
    struct NullTest {
        var parameter: String
        var orIndex: Int
    }

    let bytes: [UInt8]
    private(set) var code: [SQLToken] = []
    /// The index of the `)` that closes each `(` (by index in ``code``); none when unbalanced.
    private(set) var matchingClose: [Int: Int] = [:]

    init(_ source: String) throws(OptionalClauseError) {
        var lexer = SQLLexer(source)
        self.bytes = lexer.bytes
        var open: [Int] = []
        while true {
            let token: SQLToken
            do {
                guard let next = try lexer.next() else { break }
                token = next
            } catch {
                throw OptionalClauseError(bytes: self.bytes, offset: error.offset, reason: error.reason)
            }
            switch token.kind {
            case .whitespace, .comment:
                continue
            case .openParenthesis:
                open.append(self.code.count)
            case .closeParenthesis:
                if let opening = open.popLast() { self.matchingClose[opening] = self.code.count }
            default:
                break
            }
            self.code.append(token)
        }
    }

    /// The test `PARAMETER IS NULL OR` starting at code token `index`, where PARAMETER is `:p`,
    /// `:p::type` or `CAST(:p AS type)`; nil when the tokens there are anything else.
    func nullTest(at index: Int) -> NullTest? {
        guard let first = self.token(at: index) else { return nil }
        let parameter: String
        var next: Int
        if let name = first.parameterName(in: self.bytes) {
            parameter = name
            next = index + 1
            if self.token(at: next)?.kind == .cast, self.token(at: next + 1)?.kind == .word { next += 2 }
        } else if first.isWord("CAST", in: self.bytes) {
            guard self.token(at: index + 1)?.kind == .openParenthesis,
                let name = self.token(at: index + 2)?.parameterName(in: self.bytes),
                self.isWord("AS", at: index + 3), let close = self.matchingClose[index + 1]
            else { return nil }
            parameter = name
            next = close + 1
        } else {
            return nil
        }
        guard self.isWord("IS", at: next), self.isWord("NULL", at: next + 1), self.isWord("OR", at: next + 2) else { return nil }
        return NullTest(parameter: parameter, orIndex: next + 2)
    }

    private func token(at index: Int) -> SQLToken? {
        index < self.code.count ? self.code[index] : nil
    }

    private func isWord(_ keyword: String, at index: Int) -> Bool {
        self.token(at: index)?.isWord(keyword, in: self.bytes) ?? false
    }
}
