import Foundation
import SpoutCore
import SpoutTestSupport
import Testing

/// `spout serve` with tracing on exports its spans over OTLP/HTTP (protobuf, the default) to a
/// receiver in the test (``OTLPReceiver``), as it would to an OpenTelemetry collector: the span
/// tree of a detail request and of a stream, continuing the caller's `traceparent`, with no
/// parameter value, path or SQL in any attribute; errors marked; nothing exported when
/// tracing is off. The spans are read after the service has stopped, which flushes the
/// exporter: no waiting on time.
@Suite("OTLP export of spans", .serialized)
struct OTLPExportTests {
    /// A parent row and its children, bound from the parent's `id`: a detail request.
    static let parents = """
        paths:
          /parents/{id}:
            get:
              description: One parent and its children.
              sql: SELECT CAST(:id AS integer) AS id, 'kept out of spans' AS note
              result: object
              parameters:
                - name: id
                  type: integer
              details:
                - name: children
                  sql: SELECT CAST(:id AS integer) + 1 AS child UNION ALL SELECT CAST(:id AS integer) + 2 AS child

        """

    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let callerSpanID = "00f067aa0ba902b7"
    /// A value no attribute may carry.
    static let secretID = 7_345_981

    @Test("a detail request: request → acquire → pipeline → encode (PostgreSQL) or query (SQLite), in the caller's trace",
          arguments: SQLDialect.allCases)
    func detailRequestTree(_ dialect: SQLDialect) async throws {
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        var traceResponse: String?
        var log = ""
        let environment = [
            "SPOUT_TRACING_ENABLED": "true", "SPOUT_TRACING_ENDPOINT": receiver.baseURL,
            "SPOUT_TRACING_SERVICE_NAME": "spout-otlp-test", "OTEL_BSP_SCHEDULE_DELAY": "100",
            // The leased path, whose spans start with the wait for the connection (a read on a
            // shared connection has none: Shared reads' own test).
            "SPOUT_DATABASE_SHARED_READERS": "0",
        ]
        var ran = false
        try await StreamsService.with(
            dialect, prefix: "spout_rel_otlp_detail", extraEndpoints: ["parents.yaml": Self.parents], poolSize: 1, statementTimeoutMs: 0,
            environment: environment
        ) { service in
            ran = true
            // The change log is pruned once as the service starts, on the pool's one connection:
            // a write, after which the next read sets the connection read-only on a thread. It
            // takes milliseconds; the warm-ups below must come after it.
            try await Task.sleep(for: .seconds(2))
            // Two first requests on the pool's one connection: on PostgreSQL the first opens it
            // (a connection not yet open reads on a thread) if startup has not, and the first that
            // runs event-driven learns the parent's columns; after them the children are foreseen.
            for id in [Self.secretID - 2, Self.secretID - 1] {
                let warmUp = try await service.get("/parents/\(id)?details=children")
                try #require(warmUp.status == 200, "\(warmUp.text)")
            }
            let response = try await service.get(
                "/parents/\(Self.secretID)?details=children", headers: [("traceparent", "00-\(Self.traceID)-\(Self.callerSpanID)-01")])
            try #require(response.status == 200, "\(response.text)")
            #expect(response.text.contains("\"child\":\(Self.secretID + 2)"))
            traceResponse = response.header("traceresponse")
            // The access log line goes out at the end of the event loop's turn that sent the
            // response (StandardErrorWriter), so the client can have the response first.
            _ = try await eventually { service.log.contains("trace.id=\(Self.traceID)") }
            log = service.log
            try await Self.awaitExport(receiver, serverSpans: 3)
        }
        guard ran else { return }
        let spans = receiver.spans
        #expect(receiver.problems.isEmpty, "\(receiver.problems)")
        #expect(receiver.requests.allSatisfy { $0 == "POST /v1/traces application/x-protobuf" }, "\(receiver.requests)")

        let request = try #require(
            spans.first { $0.kind == 2 && $0.name == "GET /parents/{id}" && $0.parentSpanID == Self.callerSpanID }, "\(spans)")
        #expect(request.traceID == Self.traceID)
        #expect(request.parentSpanID == Self.callerSpanID)
        #expect(request.serviceName == "spout-otlp-test")
        #expect(request.attributes["http.request.method"] == "GET")
        #expect(request.attributes["http.route"] == "/parents/{id}")
        #expect(request.attributes["http.response.status_code"] == "200")
        #expect(request.statusCode != 2)
        // The response and the access log name the exported span.
        #expect(traceResponse == "00-\(Self.traceID)-\(request.spanID)-01")
        #expect(log.contains("span.id=\(request.spanID)") && log.contains("trace.id=\(Self.traceID)"), "\(log)")

        let children = spans.filter { $0.parentSpanID == request.spanID }.sorted { $0.startNanoseconds < $1.startNanoseconds }
        let expected = dialect == .postgres ? ["acquire", "pipeline", "encode"] : ["acquire", "query"]
        #expect(children.map(\.name) == expected, "\(children)")
        let system = dialect == .postgres ? "postgresql" : "sqlite"
        for child in children {
            #expect(child.traceID == Self.traceID)
            #expect(child.attributes["db.system.name"] == system, "\(child)")
            #expect(child.startNanoseconds >= request.startNanoseconds && child.endNanoseconds <= request.endNanoseconds, "\(child)")
            #expect(child.statusCode != 2, "\(child)")
        }
        #expect(children.first?.attributes["spout.database"] == "primary")
        if dialect == .postgres {
            // One round trip: the parent with its children's statement, foreseen from the path's
            // argument.
            let pipeline = try #require(children.first { $0.name == "pipeline" })
            #expect(pipeline.attributes["spout.round_trip"] == "1")
            #expect(pipeline.attributes["db.operation.batch.size"] == "2", "\(pipeline)")
            #expect(children.first { $0.name == "encode" }?.attributes["spout.rows"] == "1")
            // The event-driven request that learned the columns could not foresee the children:
            // its detail batch was a second round trip.
            let warmUps = spans.filter { $0.kind == 2 && $0.name == "GET /parents/{id}" && $0.traceID != Self.traceID }
            #expect(warmUps.count == 2)
            let learning = warmUps.map { warmUp in
                spans.filter { $0.parentSpanID == warmUp.spanID }.sorted { $0.startNanoseconds < $1.startNanoseconds }
            }.first { $0.contains { $0.name == "pipeline" } }
            let learned = try #require(learning, "\(spans)")
            #expect(learned.map(\.name) == ["acquire", "pipeline", "pipeline", "encode"], "\(learned)")
            #expect(learned.filter { $0.name == "pipeline" }.map { $0.attributes["spout.round_trip"] ?? "" } == ["1", "2"])
            #expect(learned.filter { $0.name == "pipeline" }.map { $0.attributes["db.operation.batch.size"] ?? "" } == ["1", "1"])
        }
        Self.expectNoValues(in: spans)
    }

    @Test("a stream: request → acquire → stream, in the caller's trace; OTEL_TRACES_EXPORTER and OTEL_* turn it on",
          arguments: SQLDialect.allCases)
    func streamTree(_ dialect: SQLDialect) async throws {
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        var ran = false
        var traceResponse: String?
        try await StreamsService.with(
            dialect, prefix: "spout_rel_otlp_stream", extraEndpoints: [:], poolSize: 2, statementTimeoutMs: 0,
            environment: [
                "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.baseURL, "OTEL_SERVICE_NAME": "spout-from-env",
                "OTEL_BSP_SCHEDULE_DELAY": "100",
            ]
        ) { service in
            ran = true
            let response = try await service.get(
                "/big?rows=3000", headers: [("traceparent", "00-\(Self.traceID)-\(Self.callerSpanID)-01")])
            try #require(response.status == 200 && response.isComplete)
            traceResponse = response.header("traceresponse")
            try await Self.awaitExport(receiver, serverSpans: 1)
        }
        guard ran else { return }
        let spans = receiver.spans
        let request = try #require(spans.first { $0.kind == 2 && $0.name == "GET /big" }, "\(spans)")
        #expect(request.traceID == Self.traceID && request.parentSpanID == Self.callerSpanID)
        #expect(request.serviceName == "spout-from-env")
        #expect(traceResponse == "00-\(request.traceID)-\(request.spanID)-01")
        let children = spans.filter { $0.parentSpanID == request.spanID }.sorted { $0.startNanoseconds < $1.startNanoseconds }
        #expect(children.map(\.name) == ["acquire", "stream"], "\(children)")
        #expect(children.last?.attributes["spout.rows"] == "3000")
        #expect(children.allSatisfy { $0.traceID == request.traceID })
        Self.expectNoValues(in: spans)
    }

    @Test("a statement timeout marks the request span (504) and the database span (statement_timeout)", arguments: SQLDialect.allCases)
    func errorsAreMarked(_ dialect: SQLDialect) async throws {
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        var ran = false
        try await StreamsService.with(
            dialect, prefix: "spout_rel_otlp_error", extraEndpoints: ["slow.yaml": TestEndpoints.slow(dialect, timeoutMs: 200)], poolSize: 2,
            statementTimeoutMs: 0,
            environment: ["SPOUT_TRACING_ENABLED": "true", "SPOUT_TRACING_ENDPOINT": receiver.baseURL, "OTEL_BSP_SCHEDULE_DELAY": "100"]
        ) { service in
            ran = true
            let response = try await service.get("/slow")
            #expect(response.status == 504)
            let missing = try await service.get("/nowhere/\(Self.secretID)")
            #expect(missing.status == 404)
            try await Self.awaitExport(receiver, serverSpans: 2)
        }
        guard ran else { return }
        let spans = receiver.spans
        let request = try #require(spans.first { $0.kind == 2 && $0.name == "GET /slow" }, "\(spans)")
        #expect(request.statusCode == 2)
        #expect(request.attributes["error.type"] == "504")
        #expect(request.attributes["http.response.status_code"] == "504")
        let failed = spans.filter { $0.parentSpanID == request.spanID && $0.statusCode == 2 }
        #expect(failed.map { $0.attributes["error.type"] } == ["statement_timeout"], "\(spans)")
        // A path no route matches is named by its method alone, and is not an error.
        let unrouted = try #require(spans.first { $0.kind == 2 && $0.attributes["http.response.status_code"] == "404" }, "\(spans)")
        #expect(unrouted.name == "GET")
        #expect(unrouted.statusCode != 2)
        Self.expectNoValues(in: spans)
    }

    @Test("sampling: with samplePercent 0 only requests whose caller sampled them are exported")
    func samplingFollowsTheCaller() async throws {
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        var answers: [String: String] = [:]
        try await StreamsService.with(
            .sqlite, prefix: "spout_rel_otlp_sampling", extraEndpoints: [:], poolSize: 2, statementTimeoutMs: 0,
            environment: [
                "SPOUT_TRACING_ENABLED": "true", "SPOUT_TRACING_ENDPOINT": receiver.baseURL, "SPOUT_TRACING_SAMPLE_PERCENT": "0",
                "OTEL_BSP_SCHEDULE_DELAY": "100",
            ]
        ) { service in
            for (name, flags) in [("none", nil), ("unsampled", "00"), ("sampled", "01")] as [(String, String?)] {
                let headers = flags.map { [("traceparent", "00-\(Self.traceID)-\(Self.callerSpanID)-\($0)")] } ?? []
                let response = try await service.get("/one", headers: headers)
                #expect(response.status == 200)
                answers[name] = response.header("traceresponse")
            }
            try await Self.awaitExport(receiver, serverSpans: 1)
        }
        let spans = receiver.spans
        // Only the sampled request's tree: its request span and its children.
        let requests = spans.filter { $0.kind == 2 }
        #expect(requests.count == 1, "\(spans)")
        let request = try #require(requests.first)
        #expect(request.parentSpanID == Self.callerSpanID && request.traceID == Self.traceID)
        #expect(spans.allSatisfy { $0.traceID == Self.traceID }, "\(spans)")
        #expect(spans.filter { $0.parentSpanID == request.spanID }.map(\.name).sorted() == ["acquire", "query"], "\(spans)")
        #expect(answers["sampled"] == "00-\(Self.traceID)-\(request.spanID)-01")
        // The others are answered as not sampled, the caller's in its own trace.
        #expect(answers["unsampled"]?.hasPrefix("00-\(Self.traceID)-") == true && answers["unsampled"]?.hasSuffix("-00") == true)
        #expect(answers["none"]?.hasSuffix("-00") == true && answers["none"]?.contains(Self.traceID) == false)
    }

    @Test("tracing off (the default): nothing is exported, even with an OTLP endpoint in the environment")
    func offByDefault() async throws {
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        try await StreamsService.with(
            .sqlite, prefix: "spout_rel_otlp_off", extraEndpoints: [:], poolSize: 2, statementTimeoutMs: 0,
            environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": receiver.baseURL, "OTEL_BSP_SCHEDULE_DELAY": "100"]
        ) { service in
            for _ in 0..<3 {
                let one = try await service.get("/one")
                #expect(one.status == 200)
            }
            let stream = try await service.get("/big?rows=100")
            #expect(stream.status == 200)
            #expect(!service.log.contains("tracing:"))
        }
        // Stopped: an exporter would have sent what it held.
        #expect(receiver.requests.isEmpty, "\(receiver.requests)")
    }

    static let officialDefinitions = PythonModule(
        module: "opentelemetry.proto.collector.trace.v1.trace_service_pb2", package: "opentelemetry-proto")

    @Test("OpenTelemetry's own definitions (opentelemetry-proto, PyPI) read the export as the receiver does",
          .enabled(if: Self.officialDefinitions.isAvailable || Self.officialDefinitions.isRequired,
                   "python3 module opentelemetry.proto missing: python3 -m pip install opentelemetry-proto"))
    func officialDefinitionsAgree() async throws {
        try #require(Self.officialDefinitions.isAvailable, "opentelemetry-proto missing (required under CI=true)")
        let receiver = try OTLPReceiver()
        defer { receiver.stop() }
        try await StreamsService.with(
            .sqlite, prefix: "spout_rel_otlp_official", extraEndpoints: ["parents.yaml": Self.parents], poolSize: 2,
            statementTimeoutMs: 0,
            environment: ["SPOUT_TRACING_ENABLED": "true", "SPOUT_TRACING_ENDPOINT": receiver.baseURL, "OTEL_BSP_SCHEDULE_DELAY": "100"]
        ) { service in
            let detail = try await service.get(
                "/parents/\(Self.secretID)?details=children", headers: [("traceparent", "00-\(Self.traceID)-\(Self.callerSpanID)-01")])
            #expect(detail.status == 200)
            let stream = try await service.get("/big?rows=10")
            #expect(stream.status == 200)
            try await Self.awaitExport(receiver, serverSpans: 2)
        }
        let bodies = receiver.bodies
        try #require(!bodies.isEmpty)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("spout-otlp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var paths: [String] = []
        for (index, body) in bodies.enumerated() {
            let path = folder.appendingPathComponent("export-\(index).pb").path
            try Data(body).write(to: URL(fileURLWithPath: path))
            paths.append(path)
        }
        // One line per span: trace id, span id, parent span id, kind, status code, name.
        let script = """
            import sys
            from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
            for path in sys.argv[1:]:
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(open(path, "rb").read())
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            print(span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex() or "-", span.kind, span.status.code, span.name)
            """
        let result = try await ChildProcess.run(executable: "/usr/bin/env", arguments: ["python3", "-c", script] + paths)
        #expect(result.status == 0, "\(result.standardError)")
        let official = result.standardOutput.split(separator: "\n").map(String.init).sorted()
        let ours = receiver.spans.map { span in
            "\(span.traceID) \(span.spanID) \(span.parentSpanID.isEmpty ? "-" : span.parentSpanID) \(span.kind) \(span.statusCode) \(span.name)"
        }.sorted()
        #expect(official.count == 6, "\(official)")
        #expect(official == ours)
        #expect(official.contains { $0.hasPrefix(Self.traceID) && $0.hasSuffix(" 2 0 GET /parents/{id}") }, "\(official)")
    }

    @Test("the receiver decodes what it is sent, and fails on what it cannot (this suite can fail)")
    func receiverCanFail() throws {
        // ExportTraceServiceRequest { resource_spans { scope_spans { spans { name: "x", kind: 2 } } } }
        let span: [UInt8] = [0x2a, 0x01, 0x78, 0x30, 0x02]
        let scope: [UInt8] = [0x12, UInt8(span.count)] + span
        let resource: [UInt8] = [0x12, UInt8(scope.count)] + scope
        var request: [UInt8] = [0x0a, UInt8(resource.count)] + resource
        let spans = try OTLPDecoder.spans(inExportRequest: &request)
        #expect(spans.map(\.name) == ["x"] && spans.map(\.kind) == [2])
        var truncated = Array(request.dropLast())
        #expect(throws: OTLPDecoder.Malformed.self) { try OTLPDecoder.spans(inExportRequest: &truncated) }
    }

    /// Waits until `receiver` holds `serverSpans` request spans, before the service stops: a
    /// span that ends as the process shuts down may not be exported (swift-otel's batch
    /// processor stops with it), and these tests are about the spans of requests answered.
    static func awaitExport(_ receiver: OTLPReceiver, serverSpans: Int) async throws {
        let exported = try await eventually { receiver.spans.filter { $0.kind == 2 }.count >= serverSpans }
        #expect(exported, "\(receiver.spans)")
    }

    /// No attribute or name carries the request's values, its path or SQL.
    static func expectNoValues(in spans: [OTLPSpan]) {
        for span in spans {
            for text in [span.name] + span.attributes.values {
                #expect(!text.contains(String(Self.secretID)), "\(span)")
                #expect(!text.contains("SELECT") && !text.contains("kept out of spans"), "\(span)")
                #expect(!text.contains("rows=") && !text.contains("/parents/7"), "\(span)")
            }
        }
    }
}
