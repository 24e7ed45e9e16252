/// SQL text with `:name` parameters, parsed once and rendered for one dialect.
///
/// `SELECT * FROM employees WHERE emp_no = :employeeNumber` becomes
/// `... WHERE emp_no = $1` for PostgreSQL and `... WHERE emp_no = ?1` for SQLite, with
/// ``parameterNames`` `["employeeNumber"]`. A name that appears twice reuses its number.
/// Quoted strings, quoted identifiers, dollar quotes, comments and `::` casts are left alone
/// (see ``SQLLexer``).
public struct ParsedSQL: Sendable, Hashable {
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
    public init(_ source: String, dialect: SQLDialect) throws {
        let segments = try SQLLexer.segments(of: source)
        self.init(source: source, dialect: dialect, segments: segments)
    }

    /// A statement assembled from segments (a driver's rewriting of a parsed statement); its
    /// source spells each parameter as `:name` again.
    public init(segments: [Segment], dialect: SQLDialect) {
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

    /// Parses `source` once per dialect and process; later calls return the cached result.
    public static func cached(_ source: String, dialect: SQLDialect) throws -> ParsedSQL {
        try Self.parseCache.value(for: CacheKey(source: source, dialect: dialect)) {
            try ParsedSQL(source, dialect: dialect)
        }
    }

    /// SQL text in which every parameter is replaced by `replacement(name)`.
    public func rendered(replacing replacement: (String) -> String) -> String {
        var text = ""
        for segment in self.segments {
            switch segment {
            case .sql(let sql): text += sql
            case .parameter(let name): text += replacement(name)
            }
        }
        return text
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

/// The SQL text could not be split into SQL and parameters.
public struct SQLSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The UTF-8 byte offset of the problem in the SQL text (0-based).
    public let offset: Int
    /// 1-based line and column (in UTF-8 bytes) of ``offset``.
    public let line: Int
    public let column: Int
    public let reason: String

    public var description: String { "\(self.reason) at offset \(self.offset) (line \(self.line), column \(self.column))" }
}
