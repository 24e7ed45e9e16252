/// SQL text with `:name` parameters, parsed once and rendered for one dialect.
///
/// `SELECT * FROM employees WHERE emp_no = :employeeNumber` becomes
/// `... WHERE emp_no = $1` for PostgreSQL and `... WHERE emp_no = ?1` for SQLite, with
/// ``parameterNames`` `["employeeNumber"]`. A name that appears twice reuses its number.
/// Quoted strings, quoted identifiers, dollar quotes, comments and `::` casts are left alone
/// (see ``SQLLexer``).
///
/// A class with constant fields: statements are passed from the parse cache to streams,
/// plans and drivers for every request, and sharing one costs one retain where a copy of
/// its five fields cost a retain each. Equality and hashing are by value (the source, the
/// dialect and the segments).
public final class ParsedSQL: Sendable, Hashable {
    /// A piece of the statement: verbatim SQL or a named parameter.
    public enum Segment: Sendable, Hashable {
        case sql(String)
        case parameter(String)
    }

    /// The SQL as written, with `:name` parameters.
    public let source: String
    public let dialect: SQLDialect
    /// The SQL with the dialect's numbered placeholders; what drivers prepare.
    public let text: String
    /// Distinct parameter names in order of first appearance: placeholder `i + 1` binds
    /// `parameterNames[i]`.
    public let parameterNames: [String]
    /// The statement split into verbatim SQL and parameters, for rewriting.
    public let segments: [Segment]

    /// Parses `source` for `dialect`. Throws ``SQLSyntaxError`` with the offset of the problem.
    public convenience init(_ source: String, dialect: SQLDialect) throws {
        let segments = try Self.segments(of: source)
        self.init(source: source, dialect: dialect, segments: segments)
    }

    /// `source` split into verbatim SQL and its ``SQLToken/Kind/parameter`` tokens. Throws
    /// ``SQLSyntaxError`` for what ``SQLLexer`` cannot read and for a `:` that starts no
    /// parameter and no `::` cast (`SELECT : x`, `SELECT :1`).
    static func segments(of source: String) throws(SQLSyntaxError) -> [Segment] {
        var lexer = SQLLexer(source)
        let bytes = lexer.bytes
        var segments: [Segment] = []
        var verbatimStart = 0
        func flushVerbatim(upTo end: Int) {
            if end > verbatimStart {
                segments.append(.sql(String(decoding: bytes[verbatimStart..<end], as: UTF8.self)))
            }
        }
        while let token = try lexer.next() {
            if let name = token.parameterName(in: bytes) {
                flushVerbatim(upTo: token.range.lowerBound)
                segments.append(.parameter(name))
                verbatimStart = token.range.upperBound
            } else if token.isPunctuation(":", in: bytes) {
                throw SQLSyntaxError(in: bytes, offset: token.range.lowerBound, reason: "parameter without a name")
            }
        }
        flushVerbatim(upTo: bytes.count)
        return segments
    }

    /// A statement assembled from segments (a driver's rewriting of a parsed statement); its
    /// source spells each parameter as `:name` again.
    public convenience init(segments: [Segment], dialect: SQLDialect) {
        let source = segments.map { segment -> String in
            switch segment {
            case .sql(let text): return text
            case .parameter(let name): return ":" + name
            }
        }.joined()
        self.init(source: source, dialect: dialect, segments: segments)
    }

    init(source: String, dialect: SQLDialect, segments: [Segment]) {
        var names: [String] = []
        var numbers: [String: Int] = [:]
        var text = ""
        text.reserveCapacity(source.utf8.count + 8)
        for segment in segments {
            switch segment {
            case .sql(let sql):
                text += sql
            case .parameter(let name):
                let number: Int
                if let known = numbers[name] {
                    number = known
                } else {
                    names.append(name)
                    number = names.count
                    numbers[name] = number
                }
                text += dialect.placeholder(number)
            }
        }
        self.source = source
        self.dialect = dialect
        self.text = text
        self.parameterNames = names
        self.segments = segments
    }

    public static func == (left: ParsedSQL, right: ParsedSQL) -> Bool {
        left === right || (left.dialect == right.dialect && left.source == right.source && left.segments == right.segments)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.source)
        hasher.combine(self.dialect)
    }

    /// The statement without what follows its code (``SQLLexer/codeEnd(of:)``: trailing
    /// semicolons, whitespace and comments), so that it can be wrapped in a subquery.
    public func withoutTrailingSemicolons() throws -> ParsedSQL {
        let bytes = Array(self.source.utf8)
        let end = try SQLLexer.codeEnd(of: bytes)
        guard end < bytes.count else { return self }
        return try ParsedSQL(String(decoding: bytes[..<end], as: UTF8.self), dialect: self.dialect)
    }

    /// Parses `source` once per dialect and process; later calls return the cached result.
    public static func cached(_ source: String, dialect: SQLDialect) throws -> ParsedSQL {
        try Self.parseCache.value(for: CacheKey(source: source, dialect: dialect)) {
            try ParsedSQL(source, dialect: dialect)
        }
    }

    /// Binds arguments by name, in placeholder order. Throws when one is missing.
    public func bind(_ arguments: [String: SQLValue]) throws -> [SQLValue] {
        try self.bind { arguments[$0] }
    }

    /// Binds the value `argument` gives each name, in placeholder order. Throws when it gives
    /// none.
    public func bind(_ argument: (String) -> SQLValue?) throws -> [SQLValue] {
        try self.parameterNames.map { name in
            guard let value = argument(name) else { throw MissingParameterError(name: name) }
            return value
        }
    }

    /// The text hashed once, before the cache's lock is taken: under load many threads look
    /// statements up at once, and hashing a few hundred bytes of SQL inside the lock made them
    /// queue for it. Inside, only the bucket probe and (usually pointer-equal) string
    /// comparison remain.
    private struct CacheKey: Hashable {
        let source: String
        let dialect: SQLDialect
        let hash: Int

        init(source: String, dialect: SQLDialect) {
            self.source = source
            self.dialect = dialect
            var hasher = Hasher()
            hasher.combine(source)
            hasher.combine(dialect)
            self.hash = hasher.finalize()
        }

        static func == (left: CacheKey, right: CacheKey) -> Bool {
            left.hash == right.hash && left.dialect == right.dialect && left.source == right.source
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(self.hash)
        }
    }

    private static let parseCache = BoundedCache<CacheKey, ParsedSQL>(capacity: 4096)
}

/// A named parameter of a statement had no value.
public struct MissingParameterError: Error, Sendable, CustomStringConvertible {
    public let name: String
    public var description: String { "no value for parameter :\(self.name)" }
}

