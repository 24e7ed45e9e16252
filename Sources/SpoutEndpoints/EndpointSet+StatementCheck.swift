import SpoutCore
import SpoutHTTP

extension EndpointSet {
    /// Prepares every statement of every endpoint on `database` without running it
    /// (``SpoutCore/StatementChecking``): each endpoint's SQL for the database's dialect (as
    /// written, every optional clause kept), the statements of its pages (whose key must name
    /// columns of its result), its `versionSql`, and its details' SQL at every depth, each
    /// detail as it runs below its parent (on PostgreSQL with its keys typed like the parent's
    /// columns). Returns one problem per statement the database refuses, in endpoint order;
    /// empty when all prepare.
    ///
    /// Nothing runs and nothing is written. Throws the ``SpoutCore/DatabaseError`` of a
    /// database that cannot be reached or fails meanwhile: then nothing was judged.
    public func statementProblems(on database: Database) async throws -> [StatementProblem] {
        try await self.statementCheck(on: database).problems
    }

    /// ``statementProblems(on:)``, with the columns the database described for each result
    /// that prepared (``resultColumns``).
    public func statementCheck(on database: Database) async throws -> StatementCheck {
        let endpoints = self.endpoints
        let dialect = database.dialect
        return try await database.withSession(DatabaseWork(readOnly: true)) { session in
            try await session.run { connection in
                guard let checker = connection as? any StatementChecking else {
                    throw DatabaseError(.unsupported, message: "this database cannot check statements without running them")
                }
                var check = StatementCheck()
                for endpoint in endpoints {
                    var columns: [String: [Column]] = [:]
                    check.problems += try EndpointStatementCheck(endpoint: endpoint, dialect: dialect, checker: checker)
                        .problems(columns: &columns)
                    check.resultColumns[endpoint.title] = columns
                }
                return check
            }
        }
    }
}

/// What ``EndpointSet/statementCheck(on:)`` found.
public struct StatementCheck: Sendable {
    /// One per statement the database refused, in endpoint order.
    public var problems: [StatementProblem] = []
    /// The columns of each result that prepared, as ``EndpointSet/resultColumns`` keeps them.
    public var resultColumns: [String: [String: [Column]]] = [:]
}

/// The check of one endpoint's statements (``EndpointSet/statementProblems(on:)``).
private struct EndpointStatementCheck {
    let endpoint: Endpoint
    let dialect: SQLDialect
    let checker: any StatementChecking

    /// The parameters bound as bytes (the drivers declare their type).
    var bytesParameters: Set<String> {
        Set(self.endpoint.parameters.filter { $0.type == .bytes }.map(\.name))
    }

    /// The problems of the endpoint's statements; `columns` gets the columns of each result
    /// that prepared, by detail path (`""`: the endpoint's own).
    func problems(columns described: inout [String: [Column]]) throws -> [StatementProblem] {
        var problems: [StatementProblem] = []
        let title = self.endpoint.title
        let columns = try self.check(self.endpoint.sql, what: "the SQL of \(title)", into: &problems)
        described[""] = columns
        if let columns, let page = self.endpoint.page {
            problems += try self.checkPages(page, columns: columns.map(\.label))
        }
        if let version = self.endpoint.versionSQL {
            _ = try self.check(version, what: "versionSql of \(title)", into: &problems)
        }
        try self.checkDetails(self.endpoint.details, parentColumns: columns, path: "", into: &problems, described: &described)
        return problems
    }

    /// Checks the pages of an endpoint whose SQL prepared with columns labelled `labels`: each
    /// key column is one of them (SQLite would read an unknown quoted name as a string and
    /// sort by it), and the statements of the first and the later pages prepare.
    private func checkPages(_ page: EndpointPage, columns labels: [String]) throws -> [StatementProblem] {
        let title = self.endpoint.title
        func problem(_ message: String) -> [StatementProblem] {
            [StatementProblem(file: self.endpoint.file, line: self.endpoint.line ?? 1, message: message)]
        }
        if let missing = page.key.first(where: { !labels.contains($0) }) {
            return problem(
                "page key column '\(missing)' of \(title) is not a column of its result on \(self.dialect.displayName) "
                    + "(its columns: \(labels.joined(separator: ", ")))")
        }
        // The endpoint file's checks made sure the SQL pages on every dialect.
        guard let keyset = try? KeysetQuery(self.endpoint.sql.text(for: self.dialect), key: page.key) else { return [] }
        for text in [keyset.first, keyset.next] {
            guard let parsed = try? Self.asRun(text, dialect: self.dialect) else { continue }
            do {
                _ = try self.checker.describe(parsed, bytesParameters: self.bytesParameters, parameterTypes: false)
            } catch let refused as StatementRefused {
                return problem(
                    "the pages of \(title) (page key: \(page.key.joined(separator: ", "))) do not prepare on "
                        + "\(self.dialect.displayName): \(refused.message)")
            }
        }
        return []
    }

    /// Checks `details` as they run below a parent whose rows have `parentColumns` (nil when
    /// the parent did not prepare: then each detail is checked on its own).
    private func checkDetails(
        _ details: [EndpointDetail], parentColumns: [Column]?, path: String, into problems: inout [StatementProblem],
        described: inout [String: [Column]]
    ) throws {
        for detail in details {
            let detailPath = path + detail.name
            let columns = try self.check(
                detail.sql, what: "detail '\(detailPath)' of \(self.endpoint.title)", parentColumns: parentColumns, into: &problems)
            described[detailPath] = columns
            try self.checkDetails(
                detail.details, parentColumns: columns, path: detailPath + String(EndpointDetail.pathSeparator), into: &problems,
                described: &described)
        }
    }

    /// Prepares `sql` for the dialect (below a parent with `parentColumns`, for a detail);
    /// appends a problem and returns nil when the database refuses it, else its columns.
    private func check(
        _ sql: EndpointSQL, what: String, parentColumns: [Column]? = nil, into problems: inout [StatementProblem]
    ) throws -> [Column]? {
        let file = sql.overrideFiles[self.dialect] ?? sql.file
        let firstLine = sql.overrides[self.dialect] == nil ? sql.firstLine : 1
        do {
            // The endpoint file's checks made sure it parses on every dialect.
            var statement = try Self.asRun(sql.text(for: self.dialect), dialect: self.dialect)
            if let parentColumns {
                statement = try self.asChild(statement, parentColumns: parentColumns)
            }
            return try self.checker.describe(statement, bytesParameters: self.bytesParameters, parameterTypes: false).columns
        } catch let refused as StatementRefused {
            problems.append(
                StatementProblem(
                    file: file, line: firstLine + (refused.line ?? 1) - 1,
                    message: "\(what) does not prepare on \(self.dialect.displayName): \(refused.message)"))
            return nil
        } catch let error as SQLSyntaxError {
            problems.append(StatementProblem(file: file, line: firstLine + error.line - 1, message: "\(what): invalid SQL: \(error.reason)"))
            return nil
        }
    }

    /// `text` as a request that gives every optional filter runs it: each optional clause
    /// reduced to its predicate (``SpoutCore/FilteredSQL``; `:p IS NULL` alone leaves `:p`
    /// without a type on PostgreSQL, and never runs).
    private static func asRun(_ text: String, dialect: SQLDialect) throws -> ParsedSQL {
        guard let filtered = try? FilteredSQL(text, dialect: dialect) else { return try ParsedSQL(text, dialect: dialect) }
        var given: [String: SQLValue] = [:]
        for name in filtered.written.parameterNames { given[name] = .integer(0) }
        return try filtered.statement(for: given)
    }

    /// `child` as the driver's child queries run it for one parent row: its parameters named
    /// like a parent column bind from that column (PostgreSQL casts them to its type).
    private func asChild(_ child: ParsedSQL, parentColumns: [Column]) throws -> ParsedSQL {
        var labels: [String: Column] = [:]
        for column in parentColumns where labels[column.label] == nil { labels[column.label] = column }
        let keyNames = child.parameterNames.filter { labels[$0] != nil }
        guard !keyNames.isEmpty else { return child }
        var arguments: [String: SQLValue] = [:]
        for name in child.parameterNames { arguments[name] = .null }
        return try self.checker.childQueries.statement(
            child: child, keyNames: keyNames, keyColumns: keyNames.map { labels[$0]! }, keyValues: keyNames.map { _ in .null },
            arguments: arguments
        ).sql
    }
}

extension SQLDialect {
    /// The database's name, for messages: `PostgreSQL`, `SQLite`.
    fileprivate var displayName: String {
        switch self {
        case .postgres: return "PostgreSQL"
        case .sqlite: return "SQLite"
        }
    }
}
