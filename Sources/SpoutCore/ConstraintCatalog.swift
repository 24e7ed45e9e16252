/// A connection that can name the columns of a constraint whose violation the database
/// reported without them (``ViolatedConstraint/columns`` empty): a PostgreSQL unique index,
/// CHECK or foreign key by its name, a SQLite CHECK by its text, a SQLite foreign key by
/// nothing at all. Each driver reads its own catalog.
///
/// Contract:
/// - The columns come in the constraint's order, spelled as the catalog spells them.
/// - Empty when they cannot be told: an index or CHECK on an expression, a constraint the
///   catalog does not have (dropped meanwhile), several foreign keys that could be it.
/// - Nothing is written; reads only, in the connection's current transaction if any.
public protocol ConstraintCatalogReading: DatabaseConnection {
    /// The columns of the constraint `violated` reports (see the protocol's contract).
    /// - Parameters:
    ///   - writtenTable: the table the failed statement writes (without its schema, any case),
    ///     where a report that names no table (SQLite's) is looked for; nil when unknown.
    ///   - values: what the statement wrote to `writtenTable`'s columns from the caller's
    ///     arguments, by lower-cased column name; a column the caller did not give is absent.
    ///     SQLite finds a foreign key by looking these values up in each parent table.
    func violatedColumns(_ violated: ViolatedConstraint, writtenTable: String?, values: [String: SQLValue]) throws -> [String]
}

extension ConstraintCatalogReading {
    /// The first column of every row of `result`, when each is text; empty otherwise.
    package static func texts(_ result: QueryResult?) -> [String] {
        var texts: [String] = []
        for row in result?.rows ?? [] {
            guard case .text(let text)? = row.first else { return [] }
            texts.append(text)
        }
        return texts
    }
}
