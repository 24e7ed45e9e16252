import SpoutCore

/// Extra endpoints for the tests, as endpoint-file YAML, per database.
enum TestEndpoints {
    /// `GET /big?rows=N` (default `rows`): N rows of about 220 bytes each, produced as they are
    /// read (never materialized first); `GET /one`: a single small row.
    static func streams(_ dialect: SQLDialect, defaultRows: Int = 2_000_000) -> String {
        let big: String
        switch dialect {
        case .postgres:
            // A set-returning function in the select list runs lazily (ProjectSet), unlike one in
            // FROM, which fills a tuplestore before the first row.
            big = "SELECT g AS id, repeat('x', 200) AS pad FROM (SELECT generate_series(1, :rows) AS g) AS s"
        case .sqlite:
            big = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < :rows) SELECT x AS id, hex(zeroblob(100)) AS pad FROM c"
        }
        return """
            paths:
              /big:
                get:
                  description: A big stream.
                  sql: "\(big)"
                  parameters:
                    - name: rows
                      type: integer
                      default: \(defaultRows)
              /one:
                get:
                  description: One small row.
                  sql: SELECT 1 AS one
                  result: object

            """
    }

    /// `GET /slow` with a statement timeout of `timeoutMs` that it always exceeds, and
    /// `GET /hold?seconds=S`, which keeps its connection busy about S seconds (PostgreSQL) or a
    /// moment (SQLite).
    static func slow(_ dialect: SQLDialect, timeoutMs: Int) -> String {
        let slow: String
        let hold: String
        switch dialect {
        case .postgres:
            slow = "SELECT pg_sleep(30) IS NULL AS slept"
            hold = "SELECT pg_sleep(:seconds) IS NULL AS slept"
        case .sqlite:
            slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c"
            hold = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < :seconds * 1000000) SELECT count(*) > 0 AS slept FROM c"
        }
        return """
            paths:
              /slow:
                get:
                  description: Always runs into its statement timeout.
                  sql: "\(slow)"
                  result: object
                  timeoutMs: \(timeoutMs)
              /hold:
                get:
                  description: Keeps a connection busy.
                  sql: "\(hold)"
                  result: object
                  parameters:
                    - name: seconds
                      type: integer
                      default: 1

            """
    }
}
