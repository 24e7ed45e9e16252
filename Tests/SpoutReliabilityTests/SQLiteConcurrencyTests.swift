import Foundation
import SpoutCore
import SpoutTestDatabases
import SpoutTestServer
import SpoutTestSupport
import Testing

/// SQLite with readers and a writer at once (WAL, busy timeout).
@Suite("SQLite writes during long reads")
struct SQLiteConcurrencyTests {
    static let rows = 100_000

    @Test("pets POSTs during open read streams all succeed, and the streams finish whole")
    func writesDuringReads() async throws {
        let database = TestDatabases.makeSQLiteDatabase()
        defer { database.drop() }
        try await onThread { try SampleData.seed(database.url, employees: 50) }
        let directory = try ServiceDirectory(
            databaseURL: database.url, extraEndpoints: ["streams.yaml": TestEndpoints.streams(.sqlite)], poolSize: 4)
        defer { directory.remove() }
        let service = try await InProcessServer.start(directory)
        let port = service.port

        // The pets' owner is the token's subject.
        let token = try await TestTokens.authorization(sub: "Reliability")
        let result = try await onThread {
            // Three readers start their streams (each holds a read transaction open) and stall.
            var readers: [RawSocket] = []
            for _ in 0..<3 {
                let socket = try RawSocket(port: port, timeout: 30, receiveBuffer: 16 * 1024)
                try socket.send(RawHTTP.request("GET", "/big?rows=\(Self.rows)"))
                try socket.receive(atLeast: 32 * 1024)
                readers.append(socket)
            }
            // Writes go through while the read transactions are open; readers keep reading.
            var writes: [Int] = []
            for index in 0..<30 {
                let body = #"{"name":"wal-\#(index)","species":"cat","sex":"f","birth":"2020-02-29"}"#
                let response = try RawHTTP.exchange(
                    port: port, RawHTTP.request("POST", "/pets", headers: [("Content-Type", "application/json"), token], body: Array(body.utf8)),
                    timeout: 30)
                writes.append(response?.status ?? 0)
                for reader in readers { try reader.receive(atLeast: reader.received.count + 16 * 1024) }
            }
            for reader in readers { try reader.receiveUntilClosed() }
            return (writes: writes, bodies: try readers.map { try RawHTTP.parse($0.received) })
        }
        #expect(result.writes == Array(repeating: 201, count: 30))
        for response in result.bodies {
            #expect(response.status == 200 && response.isComplete)
            #expect(response.text.hasSuffix(#""id":\#(Self.rows),"pad":"\#(String(repeating: "0", count: 200))"}]"#))
        }
        let pets = try await service.get("/pets?owner=Reliability")
        #expect(pets.status == 200)
        #expect(pets.text.components(separatedBy: #""name":"wal-"#).count - 1 == 30)
        await service.stop()
    }
}
