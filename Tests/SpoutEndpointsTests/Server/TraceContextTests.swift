import SpoutCore
import SpoutHTTP
import SpoutTestSupport
import Testing

/// W3C Trace Context in and out, through real sockets: a request with a valid `traceparent`
/// continues its trace, anything else starts one; every response says which in
/// `traceresponse`, and the access log line carries the same ids.
@Suite("W3C Trace Context", .serialized)
struct TraceContextTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let callerSpan = "00f067aa0ba902b7"

    /// The parts of a `traceparent`-shaped value: version, trace id, span id, flags.
    static func parts(_ value: String?) throws -> [String] {
        let parts = try #require(value, "no traceresponse").split(separator: "-").map(String.init)
        try #require(parts.count == 4, "\(value ?? "")")
        #expect(parts[0] == "00")
        #expect(parts[1].count == 32 && parts[2].count == 16 && parts[3].count == 2)
        #expect(parts[1] != String(repeating: "0", count: 32) && parts[2] != String(repeating: "0", count: 16))
        return parts
    }

    func withServer(_ body: (ServerFixture) async throws -> Void) async throws {
        try await ServerFixture.withSQLite(
            ServerConfiguration(host: "127.0.0.1", port: 0), database: DatabaseConfiguration(maximumConnections: 2), body)
    }

    @Test("a valid traceparent is continued: same trace and flags, a new span of this server, logged with the request")
    func continuesTheCallersTrace() async throws {
        try await self.withServer { fixture in
            for (path, flags) in [("/employees?limit=2", "01"), ("/employees/1", "00"), ("/nowhere", "01")] {
                let response = try await HTTPTestConnection.get(
                    port: fixture.port, path,
                    headers: [
                        ("traceparent", "00-\(Self.traceID)-\(Self.callerSpan)-\(flags)"), ("tracestate", "vendor=opaque"),
                        ("X-Request-Id", "trace-\(flags)-\(path.count)"),
                    ])
                let parts = try Self.parts(response.header("traceresponse"))
                #expect(parts[1] == Self.traceID)
                #expect(parts[2] != Self.callerSpan, "this server's span is its own")
                #expect(parts[3] == flags, "the caller's sampling decision is kept")
                let entry = try #require(fixture.log.requests(withID: "trace-\(flags)-\(path.count)").first)
                #expect(entry.metadata["trace.id"] == Self.traceID)
                #expect(entry.metadata["span.id"] == parts[2])
            }
        }
    }

    @Test("no traceparent, or a malformed one, starts a new trace, unsampled, one per request")
    func startsATraceOtherwise() async throws {
        try await self.withServer { fixture in
            let malformed = [
                nil, "", "garbage", "ff-\(Self.traceID)-\(Self.callerSpan)-01",
                "00-\(String(repeating: "0", count: 32))-\(Self.callerSpan)-01", "00-\(Self.traceID)-\(String(repeating: "0", count: 16))-01",
                "00-\(Self.traceID.uppercased())-\(Self.callerSpan)-01", "00-\(Self.traceID)-\(Self.callerSpan)",
            ]
            var seen: Set<String> = []
            for value in malformed {
                let response = try await HTTPTestConnection.get(
                    port: fixture.port, "/employees?limit=1", headers: value.map { [("traceparent", $0)] } ?? [])
                let parts = try Self.parts(response.header("traceresponse"))
                #expect(parts[1] != Self.traceID, "\(value ?? "none") was taken as a trace")
                #expect(parts[3] == "00")
                seen.insert(parts[1])
            }
            #expect(seen.count == malformed.count, "every request starts its own trace")
        }
    }
}
