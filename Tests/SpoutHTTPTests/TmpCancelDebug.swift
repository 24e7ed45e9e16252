import Foundation
import NIOPosix
import SpoutCore
import SpoutDrivers
import SpoutTestSupport
import Testing

@Test func tmpCancelDebug() async throws {
    let url = try TestDatabases.requirePostgresURL()
    let connection = try Drivers.driver(for: url).connect(readOnly: false, statistics: QueryStatistics())
    let start = ContinuousClock.now
    Thread.detachNewThread {
        Thread.sleep(forTimeInterval: 1.5)
        print("DBG cancelling")
        connection.cancel()
    }
    do {
        try connection.begin(readOnly: true)
        let parsed = try ParsedSQL("SELECT g AS id FROM generate_series(1, :n) g", dialect: .postgres)
        let cursor = try connection.query(parsed, [.integer(1_000_000_000)], options: QueryOptions())
        print("DBG cursor returned after", ContinuousClock.now - start)
        _ = try cursor.next()
        print("DBG next returned")
    } catch {
        print("DBG error", String(reflecting: error), ContinuousClock.now - start)
    }
}
