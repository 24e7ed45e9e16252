import CLibPQ
import Foundation
import SpoutCore
import SpoutTestDatabases
import Testing

@testable import SpoutPostgres

#if canImport(Glibc)
import Glibc
#endif

/// The answer deadline's rules on a socket pair (no server needed), and the connection
/// parameters the driver adds for a server that stops answering, on a real connection.
@Suite struct PostgresAnswerDeadlineTests {
    /// A connected pair of Unix sockets: the deadline's and its peer's.
    private static func socketPair() throws -> (Int32, Int32) {
        var pair: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        return (pair[0], pair[1])
    }

    /// Whether `socket` was shut: a read returns end of stream at once instead of waiting.
    private static func isShut(_ socket: Int32) -> Bool {
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 0) > 0 else { return false }
        var byte: UInt8 = 0
        return recv(socket, &byte, 1, Int32(MSG_DONTWAIT)) == 0
    }

    @Test("a wait past its statement timeout and grace shuts the socket, once; one within them does not")
    func overdueWaitsAreShut() throws {
        let (socket, peer) = try Self.socketPair()
        defer { close(socket); close(peer) }
        // Minutes, so that the process's watchdog (which watches every deadline with a grace
        // period) never reaches this one while the test runs.
        let deadline = PostgresAnswerDeadline(socket: socket, graceMilliseconds: 10_000)
        defer { deadline.retire() }
        deadline.setStatementTimeout(milliseconds: 60_000)
        let now = PostgresAnswerDeadline.now()
        let second: UInt64 = 1_000_000_000
        #expect(deadline.begin(statements: 2))
        // 2 × 60 s + 10 s: not yet at 120 s, overdue at 140 s.
        #expect(!deadline.expireIfOverdue(now: now + 120 * second))
        #expect(!Self.isShut(socket) && !deadline.hasExpired)
        #expect(deadline.expireIfOverdue(now: now + 140 * second))
        #expect(Self.isShut(socket) && deadline.hasExpired)
        #expect(!deadline.expireIfOverdue(now: now + 150 * second), "shut twice")
    }

    @Test("no deadline while nobody waits, without a statement timeout or grace, inside an outer wait, or once retired")
    func deadlinesOnlyWhereTheyApply() throws {
        let (socket, peer) = try Self.socketPair()
        defer { close(socket); close(peer) }
        let late = PostgresAnswerDeadline.now() + 3_600_000_000_000

        let deadline = PostgresAnswerDeadline(socket: socket, graceMilliseconds: 10_000)
        #expect(!deadline.begin(), "no statement timeout yet")
        deadline.setStatementTimeout(milliseconds: 60_000)
        #expect(!deadline.expireIfOverdue(now: late), "nobody waits")
        #expect(deadline.begin())
        #expect(!deadline.begin(), "an inner wait is bounded by the outer one")
        deadline.end()
        #expect(!deadline.expireIfOverdue(now: late), "the wait ended")
        #expect(deadline.begin())
        deadline.retire()
        #expect(!deadline.expireIfOverdue(now: late), "retired: the socket may be closed and its number reused")
        #expect(!Self.isShut(socket))

        let graceless = PostgresAnswerDeadline(socket: socket, graceMilliseconds: 0)
        graceless.setStatementTimeout(milliseconds: 100)
        #expect(!graceless.begin(), "no grace: no limit")
    }

    @Test("connections get connect_timeout and keepalives unless the URL sets them", .enabled(if: TestDatabases.postgresEnabled))
    func connectionDefaults() throws {
        let database = try TestDatabases.makePostgresDatabase(prefix: "spout_drv_defaults")
        defer { database.drop() }
        let defaults = try Self.options(of: database.url)
        #expect(defaults["connect_timeout"] == "10")
        #expect(defaults["keepalives"] == "1")
        #expect(defaults["keepalives_idle"] == "30")
        #expect(defaults["keepalives_interval"] == "10")
        #expect(defaults["keepalives_count"] == "3")
        let separator = database.url.contains("?") ? "&" : "?"
        let own = try Self.options(of: database.url + separator + "connect_timeout=4&keepalives_idle=7")
        #expect(own["connect_timeout"] == "4")
        #expect(own["keepalives_idle"] == "7")
        #expect(own["keepalives_count"] == "3")
    }

    /// The libpq connection parameters in effect on a connection the driver opens to `url`.
    private static func options(of url: String) throws -> [String: String] {
        let connection = try #require(
            try PostgresDriver(url: url).connect(readOnly: false, statistics: QueryStatistics()) as? PostgresConnection)
        defer { connection.close() }
        let handle = try #require(connection.handle)
        let options = try #require(PQconninfo(handle))
        defer { PQconninfoFree(options) }
        var found: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { found[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return found
    }
}
