import SpoutCore
import SpoutHTTP

extension EndpointSet {
    /// The declared parameters whose type conflicts with the type PostgreSQL gives them in the
    /// endpoint's SQL, one message each, for `spout serve` to log at startup; empty on SQLite
    /// (which gives parameters no type) and when the database cannot be asked.
    ///
    /// Spout sends arguments as text of no declared type, and PostgreSQL converts each to the
    /// type it infers from the parameter's place (`emp_no = :code` makes `:code` an integer).
    /// A parameter declared `string` there passes Spout's checks with any text, and a value that
    /// is no integer then fails inside the database: a 400 that cannot name the parameter,
    /// where SQLite compares the text and answers 404. Declaring the type the database infers
    /// makes Spout refuse such a value itself, naming the parameter, alike on both databases.
    ///
    /// Each endpoint's SQL is prepared and described without running it
    /// (``SpoutCore/StatementChecking``, every parameter of no declared type, so that the
    /// type read is the one PostgreSQL infers); SQL that does not prepare is skipped (the
    /// start's check of every statement reports it). Only integers, fractional numbers, dates,
    /// timestamps and booleans are compared: text, `uuid`, `json` and other types take what
    /// Spout sends as they would from a client.
    public func parameterTypeConflicts(on database: Database) async -> [String] {
        guard database.dialect == .postgres else { return [] }
        let endpoints = self.endpoints
        let conflicts = try? await database.withSession(DatabaseWork(readOnly: true)) { session in
            try await session.run { connection -> [String] in
                guard let checker = connection as? any StatementChecking else { return [] }
                return endpoints.flatMap { Self.conflicts(of: $0, on: checker) }
            }
        }
        return conflicts ?? []
    }

    /// The messages for one endpoint; nothing when its SQL does not prepare.
    private static func conflicts(of endpoint: Endpoint, on checker: any StatementChecking) -> [String] {
        guard let statement = try? ParsedSQL(endpoint.sql.text(for: .postgres), dialect: .postgres),
            !statement.parameterNames.isEmpty,
            let inferred = try? checker.describe(statement, bytesParameters: [], parameterTypes: true).parameterTypes
        else { return [] }
        var messages: [String] = []
        for (name, type) in zip(statement.parameterNames, inferred) {
            guard let parameter = endpoint.parameters.first(where: { $0.name == name }),
                let kind = InferredKind(regtype: type), !kind.accepts(parameter.type.elementType)
            else { continue }
            let file = endpoint.sql.overrideFiles[.postgres] ?? endpoint.sql.file
            messages.append(
                "\(endpoint.title): PostgreSQL reads :\(name) as \(type), but it is declared \(parameter.type) (\(file)); "
                    + kind.consequence)
        }
        return messages
    }
}

/// The kinds of parameter type PostgreSQL infers that a declared type may conflict with.
private enum InferredKind {
    case integer, fraction, date, timestamp, boolean
    /// `bytea`: only bytes go in as they are.
    case bytes
    /// The text types: anything but bytes (sent as `bytea`, which no text column or operator
    /// takes).
    case text

    /// The kind of a `regtype` name (an array's elements for an array); nil for the types not
    /// compared.
    init?(regtype: String) {
        let element = regtype.hasSuffix("[]") ? String(regtype.dropLast(2)) : regtype
        switch element {
        case "smallint", "integer", "bigint": self = .integer
        case "numeric", "real", "double precision": self = .fraction
        case "date": self = .date
        case "timestamp without time zone", "timestamp with time zone": self = .timestamp
        case "boolean": self = .boolean
        case "bytea": self = .bytes
        case "text", "character varying", "character": self = .text
        default: return nil
        }
    }

    /// Whether every value Spout sends for a parameter of `declared` converts to this kind.
    func accepts(_ declared: ParameterType) -> Bool {
        switch (self, declared) {
        case (.integer, .integer): return true
        case (.fraction, .integer), (.fraction, .number), (.fraction, .decimal): return true
        case (.date, .date), (.date, .datetime), (.timestamp, .date), (.timestamp, .datetime): return true
        case (.boolean, .boolean): return true
        case (.bytes, .bytes): return true
        case (.text, let declared): return declared != .bytes
        default: return false
        }
    }

    /// What the conflict does to a request, and the declaration that matches.
    var consequence: String {
        switch self {
        case .bytes:
            return "text goes through PostgreSQL's bytea input, which reads `\\x` and backslashes as escapes, "
                + "where SQLite stores it as text: declare `type: bytes`"
        case .text:
            return "bytes go to PostgreSQL as bytea, which text does not take, so the statement fails (a 500), "
                + "where SQLite stores them: make the column bytea (BLOB on SQLite), or declare the parameter `type: string`"
        default:
            return "a value that is no \(self.noun) fails in the database as a 400 that cannot name the parameter, "
                + "and SQLite compares it as it is: declare `type: \(self.declaration)`"
        }
    }

    private var noun: String {
        switch self {
        case .integer: return "integer"
        case .fraction: return "number"
        case .date: return "date"
        case .timestamp: return "timestamp"
        case .boolean: return "boolean"
        case .bytes: return "bytes"
        case .text: return "text"
        }
    }

    /// The declaration that matches.
    private var declaration: String {
        switch self {
        case .integer: return "integer"
        case .fraction: return "decimal"
        case .date: return "date"
        case .timestamp: return "datetime"
        case .boolean: return "boolean"
        case .bytes: return "bytes"
        case .text: return "string"
        }
    }
}
