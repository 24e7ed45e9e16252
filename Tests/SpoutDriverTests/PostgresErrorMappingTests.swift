import SpoutCore
import Testing

@testable import SpoutPostgres

/// Which refusals mean "this server is a standby" (the pool then finds the primary again) and
/// which are the endpoint's own mistake. The same refusals from a real standby are in
/// `FailoverTests` (SpoutReliabilityTests).
@Suite struct PostgresErrorMappingTests {
    @Test(arguments: [
        // (SQLSTATE, in_hot_standby, the session wants writes, a standby's refusal)
        ("25006", "on", true, true),
        ("25006", nil, true, true),  // behind a pooler that does not pass in_hot_standby on
        ("0A000", "on", true, true),
        ("0A000", "off", true, false),  // a feature a primary does not support either
        ("0A000", nil, true, false),
        ("25006", "on", false, false),  // a read-only lease's write: the endpoint's mistake
        ("0A000", "on", false, false),
        ("23505", "on", true, false),
        (nil, "on", true, false),
    ] as [(String?, String?, Bool, Bool)])
    func standbyRefusals(sqlState: String?, inHotStandby: String?, wantsWrites: Bool, expected: Bool) {
        #expect(PostgresErrorMapping.meansStandby(sqlState: sqlState, inHotStandby: inHotStandby, wantsWrites: wantsWrites) == expected)
    }

    @Test func aRefusedBeginReadWriteMeansAStandbyOnlyFor0A000() {
        #expect(PostgresErrorMapping.beginReadWriteMeansStandby(sqlState: "0A000"))
        #expect(!PostgresErrorMapping.beginReadWriteMeansStandby(sqlState: "42501"))
        #expect(!PostgresErrorMapping.beginReadWriteMeansStandby(sqlState: nil))
    }

    @Test func theCodesOfTheSQLStatesStayAsTheyWere() {
        #expect(PostgresErrorMapping.code(forSQLState: "25006", cancelRequested: false) == .readOnly)
        #expect(PostgresErrorMapping.code(forSQLState: "57P01", cancelRequested: false) == .connectionLost)
    }
}
