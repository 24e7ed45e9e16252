import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

@testable import SpoutPostgres

/// A request's role and claims on the thread path (streams, pages, writes): set in the round
/// trip that opens the request's transaction, with and without session state (behind a
/// transaction pooler), and ended with the transaction.
@Suite(.serialized, .enabled(if: TestDatabases.postgresEnabled))
struct PostgresRequestSessionTests {
    private static let seen = "SELECT CAST(current_user AS text) AS role, current_setting('request.jwt.claims', true) AS claims"
    private static let claims = #"{"sub":"O'Brien; -- 名前"}"#

    private static func connect(keepsSessionState: Bool) throws -> PostgresConnection {
        let url = try TestDatabases.requirePostgresURL()
        let driver = try PostgresDriver(url: url, preparedStatements: keepsSessionState)
        return try #require(try driver.connect(readOnly: false, statistics: QueryStatistics()) as? PostgresConnection)
    }

    /// What one request reads about itself, and the round trips it took; `interleaved` reads
    /// through a server-side cursor, as a stream does.
    private static func request(
        on connection: PostgresConnection, readOnly: Bool, interleaved: Bool, session: RequestSession?
    ) throws -> (rows: [[SQLValue]], roundTrips: Int) {
        let before = connection.roundTrips
        let rows = try connection.runRequest(statementTimeout: nil, transaction: .always(readOnly: readOnly), session: session) {
            try connection.rows(Self.seen, options: QueryOptions(interleaved: interleaved))
        }
        return (rows, connection.roundTrips - before)
    }

    @Test(arguments: [true, false], [true, false])
    func aSessionCostsNoRoundTripOfItsOwn(keepsSessionState: Bool, readOnly: Bool) throws {
        let connection = try Self.connect(keepsSessionState: keepsSessionState)
        defer { connection.close() }
        try connection.setReadOnly(readOnly)
        let login = try connection.scalar("SELECT CAST(current_user AS text)")
        let session = RequestSession(role: "pg_read_all_data", claimsJSON: Self.claims)
        for interleaved in [false, true] {
            // Warm: every statement prepared (with session state), as on a pooled connection.
            _ = try Self.request(on: connection, readOnly: readOnly, interleaved: interleaved, session: session)
            let anonymous = try Self.request(on: connection, readOnly: readOnly, interleaved: interleaved, session: nil)
            let identified = try Self.request(on: connection, readOnly: readOnly, interleaved: interleaved, session: session)
            #expect(identified.rows == [[.text("pg_read_all_data"), .text(Self.claims)]])
            #expect(
                identified.roundTrips == anonymous.roundTrips,
                "the role and claims go with the BEGIN (interleaved: \(interleaved))")

            // Ended with the transaction: the next request on the connection is its own.
            let after = try Self.request(on: connection, readOnly: readOnly, interleaved: interleaved, session: nil)
            #expect(after.rows[0][0] == login)
            #expect(after.rows[0][1] == .null || after.rows[0][1] == .text(""))
        }
    }

    /// A role the login may not take: PostgreSQL's error, and nothing left open; the
    /// connection stays usable and its own.
    @Test(arguments: [true, false])
    func aRefusedRoleLeavesNoTransaction(keepsSessionState: Bool) throws {
        let connection = try Self.connect(keepsSessionState: keepsSessionState)
        defer { connection.close() }
        let login = try connection.scalar("SELECT CAST(current_user AS text)")
        _ = connection.reset()
        let refused = #expect(throws: DatabaseError.self) {
            try Self.request(
                on: connection, readOnly: true, interleaved: true, session: RequestSession(role: "spout_no_such_role", claimsJSON: "{}"))
        }
        #expect(refused?.sqlState == "22023")
        #expect(!connection.isInTransaction)
        let after = try Self.request(on: connection, readOnly: true, interleaved: false, session: nil)
        #expect(after.rows[0][0] == login)
    }
}
