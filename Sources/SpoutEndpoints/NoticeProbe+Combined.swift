import SpoutCore

extension NoticeProbe {
    /// The first column of a combined statement's rows: which member the row answers.
    static let memberColumn = "spout_member"

    /// Statements that ask several probes of one endpoint at once which of their keys their
    /// results hold now: each member's key statement (``statements(for:size:dialect:)``),
    /// tagged with the member's index in `members` and joined by `UNION ALL`, at most
    /// `membersPerStatement` key statements in each. A row is the member's index, then the
    /// key's values.
    ///
    /// Contract: the members share a session (the statement runs under one role and claims)
    /// and an endpoint (the same key columns, of the same types); each member's parameters are
    /// renamed apart, so members with different arguments never see each other's values.
    static func combinedStatements(
        asking members: [(probe: NoticeProbe, keys: [[SQLValue]])], size: Int, membersPerStatement: Int, dialect: SQLDialect
    ) throws -> [BoundStatement] {
        var parts: [(member: Int, statement: BoundStatement)] = []
        for (index, member) in members.enumerated() {
            for statement in try member.probe.statements(for: member.keys, size: size, dialect: dialect) {
                parts.append((index, statement))
            }
        }
        let limit = max(1, membersPerStatement)
        return stride(from: 0, to: parts.count, by: limit).map { start in
            Self.union(of: parts[start..<min(start + limit, parts.count)], dialect: dialect)
        }
    }

    /// One `UNION ALL` of `parts`, each wrapped to answer its member's index first.
    private static func union(of parts: ArraySlice<(member: Int, statement: BoundStatement)>, dialect: SQLDialect) -> BoundStatement {
        var segments: [ParsedSQL.Segment] = []
        var values: [SQLValue] = []
        for (position, part) in parts.enumerated() {
            let prefix = "spout_m\(position)_"
            segments.append(.sql(position == 0 ? "" : "\nUNION ALL\n"))
            segments.append(.sql("SELECT \(part.member) AS \(Self.memberColumn), spout_keys.* FROM (\n"))
            for segment in part.statement.sql.segments {
                switch segment {
                case .sql: segments.append(segment)
                case .parameter(let name): segments.append(.parameter(prefix + name))
                }
            }
            segments.append(.sql("\n) AS spout_keys"))
            // The part's values in its own placeholder order, which the renamed names keep.
            values.append(contentsOf: part.statement.parameters)
        }
        return BoundStatement(ParsedSQL(segments: segments, dialect: dialect), values)
    }
}
