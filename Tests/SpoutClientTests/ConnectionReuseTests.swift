import Foundation
import SpoutClient
import SpoutTestSupport
import Synchronization
import Testing

/// Keep-alive connections reused across calls and pages, counted by the client
/// (``NIOHTTPTransport/connectionsOpened``) against `spout serve` itself, and by nginx
/// (`$connection` in its access log) over TLS.
@Suite struct ConnectionReuseTests {
    struct Pet: Decodable, Equatable {
        var name: String
        var species: String
    }

    struct Employee: Decodable {
        var employeeNumber: Int
    }

    @Test func aHundredObjectsFromSpoutTakeOneConnection() async throws {
        try await LiveSpout.with { server in
            let transport = NIOHTTPTransport()
            let client = SpoutClient(baseURL: server.baseURL, transport: transport)
            for _ in 0..<100 {
                let pet = try await client.object(Pet.self, path: "/pets/Fluffy")
                #expect(pet.name == "Fluffy")
            }
            print("SpoutClientTests: 100 objects from spout serve over \(transport.connectionsOpened) connection(s)")
            #expect(transport.connectionsOpened <= 2)
        }
    }

    @Test func aBodyGivenUpMidStreamClosesItsConnection() async throws {
        try await LiveSpout.with(extraFiles: LargeStreamMemoryTests.endpointFiles) { server in
            let transport = NIOHTTPTransport()
            let client = SpoutClient(baseURL: server.baseURL, transport: transport)
            var read = 0
            for try await _ in try await client.rows(Employee.self, path: "/client-rows", query: [URLQueryItem(name: "count", value: "300000")]) {
                read += 1
                if read == 5 { break }
            }
            #expect(transport.connectionsOpened == 1)
            // The stream's connection still had body bytes coming: it is closed, not reused.
            #expect(try await client.object(Pet.self, path: "/pets/Fluffy").name == "Fluffy")
            #expect(transport.connectionsOpened == 2)
            // The object's body ended: its connection is reused.
            #expect(try await client.object(Pet.self, path: "/pets/Fluffy").name == "Fluffy")
            #expect(transport.connectionsOpened == 2)
        }
    }

    @Test func aConnectionTheServerClosesIsNotReused() async throws {
        let body = #"{"name":"Fluffy","species":"cat"}"#
        // One server says it closes; the other says nothing (keep-alive) but closes anyway,
        // as an idle timeout would. Either way each call needs a connection of its own.
        for headers in [["Connection: close"], [String]()] {
            let server = try await ScriptedHTTPServer.start { _, connection in
                try await connection.sendResponse(headers: ["Content-Type: application/json"] + headers, body: body)
            }
            let transport = NIOHTTPTransport()
            let client = SpoutClient(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, transport: transport)
            for _ in 0..<3 {
                #expect(try await client.object(Pet.self, path: "/pets/Fluffy").name == "Fluffy")
            }
            #expect(server.requests.count == 3, "\(headers)")
            #expect(transport.connectionsOpened == 3, "\(headers)")
            await server.stop()
        }
    }
}

/// The same through nginx over TLS: nginx counts the TCP connections.
@Suite(.serialized, .enabled(if: ThrowawayNginx.isAvailable)) struct TLSConnectionReuseTests {
    @Test func aHundredObjectsAndFiftyPagesOverTLSUseAFewConnections() async throws {
        try await TLSTests.withTLS { _, nginx, pki in
            let transport = NIOHTTPTransport(tls: SpoutTLSConfiguration(additionalTrustRootsPEM: [try pki.pem(pki.caCertificate)]))
            let client = SpoutClient(baseURL: nginx.baseURL(), transport: transport)
            for _ in 0..<100 {
                #expect(try await client.object(ConnectionReuseTests.Pet.self, path: "/pets/Fluffy").name == "Fluffy")
            }
            let objects = try await nginx.accessLog(atLeast: 100) { $0.request.contains("/pets/Fluffy") }
            let objectConnections = Set(objects.map(\.connection))
            #expect(objects.count == 100)

            // 50 pages of 5 employees, each page a request that follows the last one's Link.
            var rows = 0
            let pages = [URLQueryItem(name: "pageSize", value: "5")]
            for try await _ in try await client.rows(ConnectionReuseTests.Employee.self, path: "/employees", query: pages, allPages: true) {
                rows += 1
                if rows == 250 { break }
            }
            // The 50th page's line may come a moment after its 250th row was read.
            let pageRequests = try await nginx.accessLog(atLeast: 50) { $0.request.contains("GET /employees") }
            let pageConnections = Set(pageRequests.map(\.connection))
            print(
                "SpoutClientTests: over TLS through nginx, 100 objects used \(objectConnections.count) connection(s); "
                    + "\(pageRequests.count) pages (allPages) used \(pageConnections.count); the client opened \(transport.connectionsOpened) in all")
            #expect(rows == 250)
            #expect(pageRequests.count >= 50)
            #expect(objectConnections.count <= 2)
            #expect(pageConnections.count <= 2)
        }
    }
}
