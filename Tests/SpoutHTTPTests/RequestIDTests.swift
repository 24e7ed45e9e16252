import HTTPTypes
import Testing

@testable import SpoutHTTP

/// Request ids: the client's when reasonable, else 16 hex digits unique within the process.
@Suite struct RequestIDTests {
    @Test func generatedIdsAreDistinctHexDigits() {
        let ids = (0..<20_000).map { _ in RequestID.make(from: nil) }
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.utf8.count == 16 && $0.utf8.allSatisfy { "0123456789abcdef".utf8.contains($0) } })
    }

    @Test func mixIsABijectionOnConsecutiveValues() {
        // Consecutive counters spread over the whole range, and never collide.
        let mixed = (0..<UInt64(50_000)).map(IdentifierGenerator.mix)
        #expect(Set(mixed).count == mixed.count)
        #expect(mixed.filter { $0 >> 63 == 1 }.count > 20_000)
        #expect(RequestID.hex(0x00ab_cdef_0123_4567) == "00abcdef01234567")
    }

    @Test func traceAndSpanIdsOfNewTracesAreDistinctAndValid() {
        // Without a `traceparent` each request starts a trace: ids from the same generator as
        // request ids, none repeated, none all-zero (which W3C Trace Context forbids).
        let traces = (0..<5_000).map { _ in RequestTrace(fields: [:], method: "GET", tracer: nil) }
        #expect(Set(traces.map(\.traceID)).count == traces.count)
        #expect(Set(traces.map(\.spanID)).count == traces.count)
        #expect(traces.allSatisfy { $0.traceID.utf8.count == 32 && $0.spanID.utf8.count == 16 })
        #expect(!traces.contains { $0.traceID == String(repeating: "0", count: 32) || $0.spanID == String(repeating: "0", count: 16) })
        // A caller's trace is continued with a new span of ours.
        let caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        let continued = RequestTrace(fields: [.traceParent: caller], method: "GET", tracer: nil)
        #expect(continued.traceID == "0af7651916cd43dd8448eb211c80319c" && continued.spanID != "b7ad6b7169203331")
    }

    /// `traceresponse` is written from the ids' digits: the same text as the W3C library's.
    @Test(arguments: ["00", "01", "09", "0a", "10", "7f", "ff"])
    func headerValueIsTheLibrarysTraceparent(flags: String) {
        let caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-\(flags)"
        let continued = RequestTrace(fields: [.traceParent: caller], method: "GET", tracer: nil)
        #expect(continued.headerValue == continued.context.traceParentHeaderValue)
        #expect(continued.headerValue.hasSuffix("-\(flags)") && continued.headerValue.utf8.count == 55)
        let new = RequestTrace(fields: [:], method: "GET", tracer: nil)
        #expect(new.headerValue == new.context.traceParentHeaderValue)
    }

    @Test func aReasonableClientIdIsKept() {
        #expect(RequestID.make(from: "req-42") == "req-42")
        #expect(RequestID.make(from: "") != "")
        #expect(RequestID.make(from: "has space").utf8.count == 16)
        #expect(RequestID.make(from: String(repeating: "x", count: 129)).utf8.count == 16)
    }
}
