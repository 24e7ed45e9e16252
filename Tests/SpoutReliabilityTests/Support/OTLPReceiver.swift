import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An OTLP/HTTP trace receiver on the loopback address, as a collector is: it accepts
/// `POST /v1/traces` with an `ExportTraceServiceRequest` in protobuf, answers 200, and keeps
/// the spans (``OTLPSpan``), decoded by the field numbers of OpenTelemetry's own definitions
/// (opentelemetry-proto, `trace/v1/trace.proto`, `collector/trace/v1/trace_service.proto`).
///
/// Contract: one thread of its own accepts and reads (never a Swift concurrency thread); each
/// request is answered with `Connection: close`. ``stop()`` closes the socket and ends it.
final class OTLPReceiver: Sendable {
    /// The port it listens on (`127.0.0.1`).
    let port: Int
    private let listener: Int32
    private let state = Mutex<State>(State())

    private struct State {
        var bodies: [[UInt8]] = []
        var spans: [OTLPSpan] = []
        var requests: [String] = []
        var problems: [String] = []
    }

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw OTLPReceiverError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw OTLPReceiverError("bind/listen: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.listener = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in self.acceptLoop() }
        thread.start()
    }

    /// The OTLP endpoint's base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it.
    var baseURL: String { "http://127.0.0.1:\(self.port)" }

    /// The export requests' bodies, as received.
    var bodies: [[UInt8]] { self.state.withLock { $0.bodies } }

    /// Every span received so far.
    var spans: [OTLPSpan] { self.state.withLock { $0.spans } }

    /// `METHOD path content-type` of every request received so far.
    var requests: [String] { self.state.withLock { $0.requests } }

    /// Requests it could not read or decode.
    var problems: [String] { self.state.withLock { $0.problems } }

    func stop() {
        shutdown(self.listener, Int32(SHUT_RDWR))
        close(self.listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(self.listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            self.serve(client)
            close(client)
        }
    }

    private func serve(_ client: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        func readMore() -> Bool {
            let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return false }
            received.append(contentsOf: buffer[0..<count])
            return true
        }
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil {
            guard readMore() else { return self.problem("connection ended inside the head") }
            headEnd = Self.find(separator, in: received)
        }
        let head = String(decoding: received[..<headEnd!], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        let requestLine = lines.first.map(String.init) ?? ""
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(fields["content-length"] ?? "") ?? 0
        let bodyStart = headEnd! + separator.count
        while received.count < bodyStart + length {
            guard readMore() else { return self.problem("connection ended inside the body") }
        }
        var body = Array(received[bodyStart..<(bodyStart + length)])
        if fields["content-encoding"] == "gzip" { return self.problem("gzip bodies are not expected") }
        let target = requestLine.split(separator: " ").dropFirst().first.map(String.init) ?? ""
        self.state.withLock { $0.requests.append("\(requestLine.split(separator: " ").first ?? "") \(target) \(fields["content-type"] ?? "")") }
        let response = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        _ = Array(response.utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard target == "/v1/traces" else { return self.problem("a request to \(target)") }
        self.state.withLock { $0.bodies.append(body) }
        do {
            let spans = try OTLPDecoder.spans(inExportRequest: &body)
            self.state.withLock { $0.spans.append(contentsOf: spans) }
        } catch {
            self.problem("undecodable body: \(error)")
        }
    }

    private func problem(_ text: String) {
        self.state.withLock { $0.problems.append(text) }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}

struct OTLPReceiverError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One span as an OTLP exporter sent it.
struct OTLPSpan: Sendable, CustomStringConvertible {
    var traceID = ""
    var spanID = ""
    var parentSpanID = ""
    var name = ""
    /// `SpanKind`: 1 internal, 2 server, 3 client.
    var kind = 0
    /// Every attribute's value as text.
    var attributes: [String: String] = [:]
    var events: [String] = []
    /// `Status.StatusCode`: 0 unset, 1 ok, 2 error.
    var statusCode = 0
    var startNanoseconds: UInt64 = 0
    var endNanoseconds: UInt64 = 0
    /// The resource's `service.name`.
    var serviceName = ""

    var description: String {
        "\(self.name) [\(self.spanID) ← \(self.parentSpanID)] status \(self.statusCode) \(self.attributes) \(self.events)"
    }
}

/// Protobuf's wire format, read as far as the OTLP trace messages need.
enum OTLPDecoder {
    struct Malformed: Error {}

    /// The spans of an `ExportTraceServiceRequest` (field 1: `ResourceSpans`).
    static func spans(inExportRequest bytes: inout [UInt8]) throws -> [OTLPSpan] {
        var spans: [OTLPSpan] = []
        try self.fields(bytes[...]) { number, value in
            guard number == 1, case .bytes(let resourceSpans) = value else { return }
            var serviceName = ""
            var scopes: [ArraySlice<UInt8>] = []
            try self.fields(resourceSpans) { number, value in
                guard case .bytes(let inner) = value else { return }
                if number == 1 {
                    // Resource: attributes (1).
                    try self.fields(inner) { number, value in
                        if number == 1, case .bytes(let pair) = value, let (key, text) = try self.keyValue(pair), key == "service.name" {
                            serviceName = text
                        }
                    }
                } else if number == 2 {
                    scopes.append(inner)
                }
            }
            for scope in scopes {
                // ScopeSpans: spans (2).
                try self.fields(scope) { number, value in
                    guard number == 2, case .bytes(let spanBytes) = value else { return }
                    var span = try self.span(spanBytes)
                    span.serviceName = serviceName
                    spans.append(span)
                }
            }
        }
        return spans
    }

    private static func span(_ bytes: ArraySlice<UInt8>) throws -> OTLPSpan {
        var span = OTLPSpan()
        try self.fields(bytes) { number, value in
            switch (number, value) {
            case (1, .bytes(let id)): span.traceID = self.hex(id)
            case (2, .bytes(let id)): span.spanID = self.hex(id)
            case (4, .bytes(let id)): span.parentSpanID = self.hex(id)
            case (5, .bytes(let name)): span.name = String(decoding: name, as: UTF8.self)
            case (6, .varint(let kind)): span.kind = Int(kind)
            case (7, .fixed64(let time)): span.startNanoseconds = time
            case (8, .fixed64(let time)): span.endNanoseconds = time
            case (9, .bytes(let pair)):
                if let (key, text) = try self.keyValue(pair) { span.attributes[key] = text }
            case (11, .bytes(let event)):
                try self.fields(event) { number, value in
                    if number == 2, case .bytes(let name) = value { span.events.append(String(decoding: name, as: UTF8.self)) }
                }
            case (15, .bytes(let status)):
                try self.fields(status) { number, value in
                    if number == 3, case .varint(let code) = value { span.statusCode = Int(code) }
                }
            default: break
            }
        }
        return span
    }

    /// A `KeyValue`: key (1) and `AnyValue` (2) as text: string (1), bool (2), int (3),
    /// double (4).
    private static func keyValue(_ bytes: ArraySlice<UInt8>) throws -> (String, String)? {
        var key: String?
        var text = ""
        try self.fields(bytes) { number, value in
            if number == 1, case .bytes(let name) = value { key = String(decoding: name, as: UTF8.self) }
            if number == 2, case .bytes(let any) = value {
                try self.fields(any) { number, value in
                    switch (number, value) {
                    case (1, .bytes(let string)): text = String(decoding: string, as: UTF8.self)
                    case (2, .varint(let flag)): text = flag == 0 ? "false" : "true"
                    case (3, .varint(let integer)): text = String(Int64(bitPattern: integer))
                    case (4, .fixed64(let bits)): text = String(Double(bitPattern: bits))
                    default: text = "(unsupported)"
                    }
                }
            }
        }
        return key.map { ($0, text) }
    }

    enum Value {
        case varint(UInt64)
        case fixed64(UInt64)
        case bytes(ArraySlice<UInt8>)
        case fixed32(UInt32)
    }

    /// Calls `body` with each field of a message, in order.
    static func fields(_ bytes: ArraySlice<UInt8>, _ body: (Int, Value) throws -> Void) throws {
        var index = bytes.startIndex
        func varint() throws -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard index < bytes.endIndex, shift < 64 else { throw Malformed() }
                let byte = bytes[index]
                index += 1
                result |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return result }
                shift += 7
            }
        }
        func fixed(_ count: Int) throws -> UInt64 {
            guard bytes.endIndex - index >= count else { throw Malformed() }
            var result: UInt64 = 0
            for offset in 0..<count { result |= UInt64(bytes[index + offset]) << (8 * UInt64(offset)) }
            index += count
            return result
        }
        while index < bytes.endIndex {
            let tag = try varint()
            let number = Int(tag >> 3)
            switch tag & 7 {
            case 0: try body(number, .varint(try varint()))
            case 1: try body(number, .fixed64(try fixed(8)))
            case 2:
                let length = Int(try varint())
                guard length >= 0, bytes.endIndex - index >= length else { throw Malformed() }
                let value = bytes[index..<(index + length)]
                index += length
                try body(number, .bytes(value))
            case 5: try body(number, .fixed32(UInt32(try fixed(4))))
            default: throw Malformed()
            }
        }
    }

    private static func hex(_ bytes: ArraySlice<UInt8>) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
