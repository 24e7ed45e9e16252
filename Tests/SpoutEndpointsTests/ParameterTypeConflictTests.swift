import Foundation
import SpoutCore
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestSupport
import Testing

/// `spout serve`'s startup check of declared parameter types against the types PostgreSQL
/// infers (``SpoutEndpoints/EndpointSet/parameterTypeConflicts(on:)``): a parameter declared
/// `string` where the SQL compares it with an integer column passes Spout's checks with any
/// text and then fails inside PostgreSQL, a 400 that names nothing, while SQLite answers 404.
@Suite("Declared parameter types against PostgreSQL's")
struct ParameterTypeConflictTests {
    static let endpoints = """
        paths:
          /missing:
            get:
              description: "A table that does not exist (yet): skipped, and the endpoints after it still checked."
              sql: SELECT id FROM no_such_table WHERE id = :id
              parameters:
                - {name: id, type: string}
          /mismatch/{code}:
            get:
              description: Declared unlike the columns they are compared with.
              sql: |
                SELECT emp_no AS "employeeNumber" FROM employees
                WHERE emp_no = :code AND hire_date > :since AND emp_no < :limit AND :flag;
              result: object
              parameters:
                - {name: code, type: string}
                - {name: since, type: number}
                - {name: limit, type: number}
                - {name: flag, type: integer}
          /files:
            get:
              description: A file declared as text, and text declared as a file.
              sql: SELECT emp_no FROM employees WHERE decode(last_name, 'escape') = :image AND first_name = :caption
              parameters:
                - {name: image, type: string}
                - {name: caption, type: bytes}
          /matched/{code}:
            get:
              description: Declared as the database reads them.
              sql: SELECT emp_no FROM employees WHERE emp_no = :code AND hire_date > :since AND last_name = :name AND emp_no < CAST(:limit AS numeric) AND sha256(:file) IS NOT NULL
              result: object
              parameters:
                - {name: file, type: bytes}
                - {name: code, type: integer}
                - {name: since, type: datetime}
                - {name: name, type: string}
                - {name: limit, type: decimal}

        """

    @Test("a conflict is named on PostgreSQL, with the type to declare; SQLite infers none", arguments: SQLDialect.allCases)
    func conflictsAreNamed(_ dialect: SQLDialect) async throws {
        guard let temporary = try TestDatabases.make(dialect, prefix: "spout_t_ptypes") else { return }
        defer { temporary.drop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-ptypes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("mismatch.yaml").path
        try Self.endpoints.write(toFile: file, atomically: true, encoding: .utf8)
        let endpoints = try EndpointSet.load(files: [file], sqlDirectory: Repository.sqlDirectory, environment: [:])
        _ = try await onThread { try SampleData.generated(employees: 20, seed: 3).load(into: temporary) }
        let database = try temporary.open()
        defer { database.close() }

        let first = await endpoints.parameterTypeConflicts(on: database)
        // Run again on the same pool: the check leaves no prepared statement or failed
        // transaction behind.
        let second = await endpoints.parameterTypeConflicts(on: database)
        let served = try await onThread {
            try database.withConnection(readOnly: true) { connection in
                try connection.queryAll([BoundStatement(try ParsedSQL("SELECT count(*) AS n FROM employees", dialect: dialect), [])])
            }
        }

        #expect(served.first?.rows == [[.integer(20)]])
        #expect(second == first)
        guard dialect == .postgres else {
            #expect(first.isEmpty, "\(first)")
            return
        }
        let tail = "fails in the database as a 400 that cannot name the parameter, and SQLite compares it as it is: declare"
        #expect(first == [
            "GET /mismatch/{code}: PostgreSQL reads :code as integer, but it is declared string (\(file)); a value that is no integer \(tail) `type: integer`",
            "GET /mismatch/{code}: PostgreSQL reads :since as date, but it is declared number (\(file)); a value that is no date \(tail) `type: date`",
            "GET /mismatch/{code}: PostgreSQL reads :limit as integer, but it is declared number (\(file)); a value that is no integer \(tail) `type: integer`",
            "GET /mismatch/{code}: PostgreSQL reads :flag as boolean, but it is declared integer (\(file)); a value that is no boolean \(tail) `type: boolean`",
            "GET /files: PostgreSQL reads :image as bytea, but it is declared string (\(file)); text goes through PostgreSQL's bytea input, which reads `\\x` and backslashes as escapes, where SQLite stores it as text: declare `type: bytes`",
            "GET /files: PostgreSQL reads :caption as text, but it is declared bytes (\(file)); bytes go to PostgreSQL as bytea, which text does not take, so the statement fails (a 500), where SQLite stores them: make the column bytea (BLOB on SQLite), or declare the parameter `type: string`",
        ])
    }

    @Test("the shipped endpoints (employees and pets, loaded) declare what PostgreSQL reads", arguments: [SQLDialect.postgres])
    func shippedEndpointsAgree(_ dialect: SQLDialect) async throws {
        guard let temporary = try TestDatabases.make(dialect, prefix: "spout_t_ptypes_shipped") else { return }
        defer { temporary.drop() }
        _ = try await onThread { try SampleData.generated(employees: 20, seed: 3).load(into: temporary) }
        let database = try temporary.open()
        defer { database.close() }
        let conflicts = try await Repository.shippedEndpoints().parameterTypeConflicts(on: database)
        #expect(conflicts.isEmpty, "\(conflicts)")
    }
}
