import SpoutCore

/// The files of a service made from a database's catalog (`spout init --from`): for each table
/// an endpoint file and its SQL, which the owner then edits as their own.
///
/// For a table `t` with primary key `k` (labels in camel case, ``ScaffoldNames``):
/// - `GET /t`: every row ordered by the key, in keyset pages (`?pageSize=`); an optional
///   filter (`?column=`) for each column that starts an index, so each filter is served by one;
/// - `GET /t/{k}`: one row, 404 when there is none;
/// - both with a detail for each table whose foreign key refers to `t` (`?details=child`);
/// - `POST /t`: creates a row from the columns the database does not fill itself (201 with
///   `Location`); `POST /t/{k}`: changes the fields sent (COALESCE keeps the others);
///   `DELETE /t/{k}`. Writes need a verified token (`auth: {token: jwt}` for POST and DELETE).
///
/// A table without a primary key gets the list and a create that answers the row (200: no
/// `Location` names it). Column types choose the
/// parameters' types (`character varying(20)` gives `maxLength: 20`, PostgreSQL's `integer`
/// its range, ``SpoutCore/CatalogColumn/integerRange``); JSON, array and bytes columns are not offered as filters.
public struct ServiceScaffold: Sendable {
    /// The tables to serve: the visible ones of the catalog.
    public var tables: [CatalogTable]
    /// The database the service reads, for the configuration file; nil leaves it to
    /// `SPOUT_DATABASE_URL` (a URL with a password is never written to a file).
    public var databaseURL: String?

    public init(tables: [CatalogTable], databaseURL: String?) {
        self.tables = tables.filter(\.isVisible)
        self.databaseURL = databaseURL
    }

    /// The files to write, by path relative to the service's folder (`config/spout.yaml`,
    /// `config/endpoints/t.yaml`, `sql/t/list.sql`, ...), in a stable order.
    public func files() -> [(path: String, text: String)] {
        var files: [(String, String)] = [("config/spout.yaml", self.configuration())]
        for table in self.tables {
            files += TableScaffold(table: table, children: self.children(of: table)).files()
        }
        return files
    }

    /// The tables whose foreign keys refer to `table`, with the key.
    private func children(of table: CatalogTable) -> [(table: CatalogTable, key: CatalogForeignKey)] {
        self.tables.flatMap { child in
            child.foreignKeys.filter { $0.referencedTable == table.name && !$0.referencedColumns.isEmpty }.map { (child, $0) }
        }
    }

    private func configuration() -> String {
        var text = """
            # A Spout service made by `spout init --from` from the database's catalog: one endpoint
            # file per table under endpoints/, its SQL under ../sql/. Edit both freely; `spout check`
            # prepares every statement against the database, `spout serve` serves them.
            # Every key of docs/configuration.md can be added here.

            endpoints: [endpoints/*.yaml]
            sqlDirectory: ../sql


            """
        if let url = self.databaseURL {
            text += "database:\n  url: \(url)\n"
        } else {
            text += "# The database: set SPOUT_DATABASE_URL (or pass --database); its password stays out of files.\n"
        }
        text += """

            # Writes (POST, DELETE) need a verified bearer token: by default an HS256 token whose
            # secret is in SPOUT_JWT_SECRET (`spout token --sub NAME` makes one for development).

            """
        return text
    }
}

/// The endpoint file and SQL files of one table (``ServiceScaffold``).
struct TableScaffold {
    var table: CatalogTable
    var children: [(table: CatalogTable, key: CatalogForeignKey)]

    private var segment: String { ScaffoldNames.segment(self.table.name) }
    private var directory: String { "sql/" + self.segment }

    func files() -> [(path: String, text: String)] {
        let name = self.table.name
        var sql: [(String, String)] = [("list.sql", self.listSQL())]
        var yaml = """
            # The \(name) table, made by `spout init --from`; SQL under sql/\(self.segment)/.

            description: The rows of \(name).

            auth:
              token: jwt
              methods: [POST, DELETE]

            paths:
              /\(self.segment):
                get:
                  description: Every row of \(name)\(self.table.primaryKey.isEmpty ? "" : ", by its key, in pages of 100 with ?pageSize=").
                  sqlFile: \(self.segment)/list.sql

            """
        let filters = self.filterColumns
        if !filters.isEmpty {
            yaml += "      parameters:\n"
            for column in filters {
                yaml += Self.parameter(column, description: "Only the rows with this \(column.name).")
            }
        }
        if !self.table.primaryKey.isEmpty {
            yaml += "      page:\n        key: [\(self.keyLabels.joined(separator: ", "))]\n        size: 100\n        maxSize: 1000\n"
        }
        yaml += self.detailsYAML(anchor: true)
        let insertable = self.table.columns.filter { !$0.isGenerated && !$0.isFilledByDatabase }
        let created = self.table.columns.filter { !$0.isGenerated && $0.isFilledByDatabase }
        if !insertable.isEmpty {
            sql.append(("create.sql", self.createSQL(insertable)))
            if self.table.primaryKey.isEmpty {
                // Nothing names the new row: no Location, so the row itself.
                yaml += "    post:\n      description: Adds a row to \(name); 200 with the row.\n"
                yaml += "      sqlFile: \(self.segment)/create.sql\n      result: object\n"
            } else {
                yaml += "    post:\n      description: Creates a row of \(name); 201 with its Location and the row.\n"
                yaml += "      sqlFile: \(self.segment)/create.sql\n      result: created\n      location: \(self.objectPath)\n"
            }
            yaml += "      parameters:\n"
            for column in insertable {
                yaml += Self.parameter(column, required: column.isNotNull)
            }
            if !created.isEmpty {
                yaml += "      # Left to the database: \(created.map(\.name).joined(separator: ", ")).\n"
            }
        }
        if !self.table.primaryKey.isEmpty {
            sql.append(("object.sql", self.objectSQL()))
            yaml += "\n  \(self.objectPath):\n    get:\n      description: One row of \(name); 404 when there is none.\n"
            yaml += "      sqlFile: \(self.segment)/object.sql\n      result: object\n"
            yaml += "      parameters:\n" + self.keyParameters()
            yaml += self.detailsYAML(anchor: false)
            let changeable = self.table.columns.filter { !$0.isGenerated && !self.table.primaryKey.contains($0.name) }
            if !changeable.isEmpty {
                sql.append(("update.sql", self.updateSQL(changeable)))
                yaml += "    post:\n      description: Changes the fields sent and keeps the others; 200 with the row, 404 when there is none.\n"
                yaml += "      sqlFile: \(self.segment)/update.sql\n      result: object\n      parameters:\n" + self.keyParameters()
                for column in changeable {
                    yaml += Self.parameter(column)
                }
            }
            sql.append(("delete.sql", self.deleteSQL()))
            yaml += "    delete:\n      description: Deletes one row of \(name); 204, or 404 when there is none.\n"
            yaml += "      sqlFile: \(self.segment)/delete.sql\n      result: none\n      parameters:\n" + self.keyParameters()
        }
        for child in self.children {
            sql.append(("details/" + self.detailName(child) + ".sql", self.detailSQL(child)))
        }
        return [("config/endpoints/\(self.segment).yaml", yaml)] + sql.map { ("\(self.directory)/\($0.0)", $0.1) }
    }

    // MARK: Names

    private var keyLabels: [String] { self.table.primaryKey.map(ScaffoldNames.label) }

    private var objectPath: String {
        "/" + self.segment + self.table.primaryKey.map { "/{\(Self.parameterName($0))}" }.joined()
    }

    /// The columns that start an index, other than a one-column key (the object endpoint's),
    /// of a type a filter can compare.
    private var filterColumns: [CatalogColumn] {
        var names: [String] = []
        for index in self.table.indexes {
            guard let first = index.first, !names.contains(first) else { continue }
            if self.table.primaryKey == [first] { continue }
            names.append(first)
        }
        return names.compactMap(self.table.column).filter { Self.parameterType($0.type) != nil && Self.isFilterable($0.type) }
    }

    /// `?details=` name of a child table's rows (its SQL file is named so too).
    private func detailName(_ child: (table: CatalogTable, key: CatalogForeignKey)) -> String {
        // Two keys of one child refer here: each detail is named by its columns too.
        let twins = self.children.filter { $0.table.name == child.table.name }.count
        return ScaffoldNames.label(twins > 1 ? child.table.name + "_by_" + child.key.columns.joined(separator: "_") : child.table.name)
    }

    /// The parameter that carries `column`: its label, unless that is a name Spout gives its
    /// own query parameters (`pageSize`, `after`, `details`, `since`), then with `Value`.
    static func parameterName(_ column: String) -> String {
        let label = ScaffoldNames.label(column)
        return ["pageSize", "after", "details", "since", "api"].contains(label) ? label + "Value" : label
    }

    // MARK: SQL

    private var selectList: String {
        self.table.columns.map(Self.selected).joined(separator: ",\n       ")
    }

    private var returning: String {
        self.table.columns.map(Self.selected).joined(separator: ", ")
    }

    /// `"emp_no" AS "empNo"`, or `"name"` where the label is the name.
    static func selected(_ column: CatalogColumn) -> String {
        let label = ScaffoldNames.label(column.name)
        return label == column.name ? ScaffoldNames.quoted(column.name) : "\(ScaffoldNames.quoted(column.name)) AS \(ScaffoldNames.quoted(label))"
    }

    private var keyCondition: String {
        self.table.primaryKey.map { "\(ScaffoldNames.quoted($0)) = :\(Self.parameterName($0))" }.joined(separator: " AND ")
    }

    private var tableName: String { ScaffoldNames.quoted(self.table.name) }

    private func listSQL() -> String {
        var text = "-- GET /\(self.segment): the rows of \(self.table.name)"
        let filters = self.filterColumns
        text += filters.isEmpty ? ".\n" : "; a filter left out (NULL) matches every row.\n"
        text += "SELECT \(self.selectList)\nFROM \(self.tableName)\n"
        for (position, column) in filters.enumerated() {
            let label = Self.parameterName(column.name)
            text += "\(position == 0 ? "WHERE" : "  AND") (:\(label) IS NULL OR \(ScaffoldNames.quoted(column.name)) = :\(label))\n"
        }
        if !self.table.primaryKey.isEmpty {
            text += "ORDER BY " + self.table.primaryKey.map(ScaffoldNames.quoted).joined(separator: ", ") + "\n"
        }
        return text
    }

    private func objectSQL() -> String {
        "-- GET \(self.objectPath): one row of \(self.table.name).\nSELECT \(self.selectList)\nFROM \(self.tableName)\nWHERE \(self.keyCondition)\n"
    }

    private func createSQL(_ columns: [CatalogColumn]) -> String {
        """
        -- POST /\(self.segment): a new row of \(self.table.name), returned whole.
        INSERT INTO \(self.tableName) (\(columns.map { ScaffoldNames.quoted($0.name) }.joined(separator: ", ")))
        VALUES (\(columns.map { ":" + Self.parameterName($0.name) }.joined(separator: ", ")))
        RETURNING \(self.returning)

        """
    }

    private func updateSQL(_ columns: [CatalogColumn]) -> String {
        let assignments = columns.map {
            "\(ScaffoldNames.quoted($0.name)) = COALESCE(:\(Self.parameterName($0.name)), \(ScaffoldNames.quoted($0.name)))"
        }
        return """
            -- POST \(self.objectPath): a field not sent is NULL, and COALESCE keeps the column's value.
            UPDATE \(self.tableName)
            SET \(assignments.joined(separator: ",\n    "))
            WHERE \(self.keyCondition)
            RETURNING \(self.returning)

            """
    }

    private func deleteSQL() -> String {
        "-- DELETE \(self.objectPath)\nDELETE FROM \(self.tableName)\nWHERE \(self.keyCondition)\n"
    }

    private func detailSQL(_ child: (table: CatalogTable, key: CatalogForeignKey)) -> String {
        let conditions = zip(child.key.columns, child.key.referencedColumns).map { column, parent in
            "\(ScaffoldNames.quoted(column)) = :\(ScaffoldNames.label(parent))"
        }
        var text = "-- Detail \(self.detailName(child)) of \(self.table.name): the rows of \(child.table.name) that refer to it.\n"
        text += "SELECT " + child.table.columns.map(Self.selected).joined(separator: ",\n       ")
        text += "\nFROM \(ScaffoldNames.quoted(child.table.name))\nWHERE \(conditions.joined(separator: " AND "))\n"
        let order = child.table.primaryKey.isEmpty ? child.table.columns.prefix(1).map(\.name) : child.table.primaryKey
        text += "ORDER BY " + order.map(ScaffoldNames.quoted).joined(separator: ", ") + "\n"
        return text
    }

    // MARK: YAML

    private func detailsYAML(anchor: Bool) -> String {
        guard !self.children.isEmpty else { return "" }
        let alias = ScaffoldNames.label(self.table.name) + "Details"
        guard anchor else { return "      details: *\(alias)\n" }
        var text = "      details: &\(alias)\n"
        for child in self.children {
            let name = self.detailName(child)
            text += "        - name: \(name)\n          sqlFile: \(self.segment)/details/\(name).sql\n"
            text += "          description: The rows of \(child.table.name) that refer to this one.\n"
        }
        return text
    }

    private func keyParameters() -> String {
        self.table.primaryKey.compactMap(self.table.column).map { Self.parameter($0, required: false, path: true) }.joined()
    }

    /// One entry of a `parameters` list for `column`.
    private static func parameter(_ column: CatalogColumn, required: Bool = false, path: Bool = false, description: String? = nil) -> String {
        var text = "        - name: \(Self.parameterName(column.name))\n"
        text += "          type: \(Self.parameterType(column.type) ?? "string")\n"
        if required && !path { text += "          required: true\n" }
        if Self.parameterType(column.type) == "string", let length = Self.length(column.declaredType.lowercased()) {
            text += "          maxLength: \(length)\n"
        }
        if let range = column.integerRange {
            text += "          minimum: \(range.lowerBound)\n          maximum: \(range.upperBound)\n"
        }
        text += "          description: \(description ?? "\(column.name) (\(column.declaredType.isEmpty ? "no declared type" : column.declaredType)).")\n"
        return text
    }

    /// The parameter type that carries values of `type`; nil for one no parameter carries.
    static func parameterType(_ type: ColumnType) -> String? {
        switch type {
        case .integer: return "integer"
        case .double: return "number"
        case .decimal: return "decimal"
        case .bool: return "boolean"
        case .text, .time, .json, .unknown: return "string"
        case .date: return "date"
        case .timestamp: return "datetime"
        case .bytes: return "bytes"
        case .array(let element): return Self.parameterType(element).map { "list of " + $0 }
        }
    }

    /// Whether `= :value` compares a column of `type` as a caller expects.
    private static func isFilterable(_ type: ColumnType) -> Bool {
        switch type {
        case .json, .bytes, .array: return false
        default: return true
        }
    }

    /// The length of a `character varying(20)` / `VARCHAR(20)` / `char(2)`.
    private static func length(_ declared: String) -> Int? {
        guard declared.contains("char"), let open = declared.firstIndex(of: "("), let close = declared.firstIndex(of: ")"), open < close else {
            return nil
        }
        return Int(declared[declared.index(after: open)..<close].filter { $0 != " " })
    }
}
