/// What a load did: rows and time per table and per file.
public struct LoadSummary: Sendable, Hashable {
    /// One table: rows loaded (from all of its files) and the seconds spent loading them.
    public struct Table: Sendable, Hashable {
        public var name: String
        public var rows: Int
        public var seconds: Double
    }

    /// One file: its name, the table its rows went to, rows, bytes and seconds.
    public struct File: Sendable, Hashable {
        public var name: String
        public var table: String
        public var rows: Int
        public var bytes: Int64
        public var seconds: Double
    }

    /// Tables in schema order, including tables that received no rows.
    public var tables: [Table]
    /// Files in load order.
    public var files: [File]
    /// Wall time of the whole load: schema, data, indexes, ANALYZE, checks and commit.
    public var seconds: Double

    /// Rows loaded into `table`, or nil when the table is not part of the load.
    public func rows(in table: String) -> Int? {
        self.tables.first { $0.name == table }?.rows
    }

    /// The total number of rows loaded.
    public var totalRows: Int { self.tables.reduce(0) { $0 + $1.rows } }
}
