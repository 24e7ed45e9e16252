/// How a driver runs an attachment's child query: for one parent row, and for a window of
/// parent rows. Core holds this contract and everything around it (which parameters are
/// parent-bound, windows, merging children into parents: ``AttachmentExecutor``); each driver
/// holds its strategy (``DatabaseConnection/childQueries``).
///
/// A child's *key parameters* are its parameters named like a parent column (`:employeeNumber`
/// binds from the parent's `employeeNumber`); `keyColumns[i]` is the parent column behind
/// `keyNames[i]`, whose type a strategy may use to type the parameter. Every other parameter
/// binds from `arguments`.
public protocol ChildQueryStrategy: Sendable {
    /// The dialect of the child SQL the strategy runs.
    var dialect: SQLDialect { get }

    /// Whether the children of one parent row are sent together (``DatabaseConnection/queryAll(_:)``,
    /// one round trip), each as ``statement(child:keyNames:keyColumns:keyValues:arguments:)``
    /// makes it; and so whether a single-row response can foresee and pipeline them
    /// (``WholeReadingConnection``). False where statements cost no round trip (in process).
    var sendsSingleParentChildrenTogether: Bool { get }

    /// `child` bound for one parent row: `keyValues[i]` for the parameter `keyNames[i]`, the
    /// others from `arguments`.
    func statement(
        child: ParsedSQL, keyNames: [String], keyColumns: [Column], keyValues: [SQLValue], arguments: [String: SQLValue]
    ) throws -> BoundStatement

    /// Runs `child` on `connection` for every parent of a window (`keyValues[p]` holds parent
    /// `p`'s values of the key parameters, in `keyNames` order). Returns the child's columns
    /// and one group of rows per parent, in window order, each in the child's own order.
    func fetch(
        child: ParsedSQL, keyNames: [String], keyColumns: [Column], keyValues: [[SQLValue]], arguments: [String: SQLValue],
        on connection: any DatabaseConnection
    ) throws -> (columns: [Column], groups: [[[SQLValue]]])
}

/// The strategy that needs nothing from its database: the child statement run once per parent
/// row, its key parameters bound to the parent's values. Right where a statement costs no
/// round trip (SQLite, in process, with its statement cache); the default of
/// ``DatabaseConnection/childQueries``.
public struct PerParentChildQueries: ChildQueryStrategy {
    public let dialect: SQLDialect

    public init(dialect: SQLDialect) {
        self.dialect = dialect
    }

    public var sendsSingleParentChildrenTogether: Bool { false }

    public func statement(
        child: ParsedSQL, keyNames: [String], keyColumns: [Column], keyValues: [SQLValue], arguments: [String: SQLValue]
    ) throws -> BoundStatement {
        var bound = arguments
        for (name, value) in zip(keyNames, keyValues) { bound[name] = value }
        return BoundStatement(child, try child.bind(bound))
    }

    public func fetch(
        child: ParsedSQL, keyNames: [String], keyColumns: [Column], keyValues: [[SQLValue]], arguments: [String: SQLValue],
        on connection: any DatabaseConnection
    ) throws -> (columns: [Column], groups: [[[SQLValue]]]) {
        var columns: [Column] = []
        var groups: [[[SQLValue]]] = []
        groups.reserveCapacity(keyValues.count)
        for parent in keyValues {
            let statement = try self.statement(
                child: child, keyNames: keyNames, keyColumns: keyColumns, keyValues: parent, arguments: arguments)
            let result = try connection.queryAll([statement])[0]
            columns = result.columns
            groups.append(result.rows)
        }
        return (columns, groups)
    }
}
