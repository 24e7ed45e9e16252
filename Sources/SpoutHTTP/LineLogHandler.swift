#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import Synchronization

/// A log handler that writes one line per entry to standard error, in swift-log's
/// `StreamLogHandler` format:
///
/// ```
/// 2026-11-23T12:24:37+0000 info spout: http.status=200 request.id=fe9bf5eb8bce64d6 [SpoutHTTP] request
/// ```
///
/// It exists because the access log writes a line per request: it formats the local time once
/// per second (`localtime` re-reads the time zone file on every call, `localtime_r` once per
/// process), writes each line as bytes from the start (metadata in one sorted pass, no string
/// built and copied), and hands each line whole to the kernel (``StandardErrorWriter``), so
/// concurrent lines never interleave.
///
/// With ``Format/json`` each entry is one JSON object per line instead, for log shippers:
/// `time`, `level`, `label`, `source`, `message`, then every metadata field under its own
/// name (numbers as JSON numbers), in sorted order:
///
/// ```
/// {"time":"2026-11-23T12:24:37+0000","level":"info","label":"spout","source":"SpoutHTTP","message":"request","duration.ms":0.4,"http.status":200,"request.id":"fe9bf5eb8bce64d6"}
/// ```
public struct LineLogHandler: LogHandler {
    /// How entries are written.
    public enum Format: String, Sendable, CaseIterable {
        /// swift-log's `StreamLogHandler` line.
        case text
        /// One JSON object per line.
        case json
    }

    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let format: Format
    private let output: @Sendable ([UInt8]) -> Void

    /// A handler for `label` writing to standard error (``StandardErrorWriter``: an event
    /// loop's lines go out once per turn of the loop).
    public static func standardError(label: String, format: Format = .text) -> LineLogHandler {
        LineLogHandler(label: label, format: format) { StandardErrorWriter.standardError.write($0) }
    }

    /// A handler for `label` that passes each finished line, newline included, to `output`.
    public init(label: String, format: Format = .text, output: @escaping @Sendable ([UInt8]) -> Void) {
        self.label = label
        self.format = format
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        self.output(self.line(for: event, timestamp: Self.timestamp()))
    }

    /// The line for `event` (for tests: with a given timestamp).
    func line(for event: LogEvent, timestamp: String) -> [UInt8] {
        var metadata = self.metadata
        if let provided = self.metadataProvider?.get(), !provided.isEmpty {
            metadata.merge(provided) { _, provided in provided }
        }
        if let explicit = event.metadata, !explicit.isEmpty {
            // The access log's case (no handler metadata) without a merged copy.
            metadata = metadata.isEmpty ? explicit : metadata.merging(explicit) { _, explicit in explicit }
        }
        if let error = event.error {
            metadata["error.message"] = "\(error)"
            metadata["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        if self.format == .json {
            return self.jsonLine(for: event, metadata: metadata, timestamp: timestamp)
        }
        var line: [UInt8] = []
        line.reserveCapacity(128 + metadata.count * 32)
        line.append(contentsOf: timestamp.utf8)
        line.append(UInt8(ascii: " "))
        line.append(contentsOf: event.level.rawValue.utf8)
        if !self.label.isEmpty { line.append(UInt8(ascii: " ")) }
        line.append(contentsOf: self.label.utf8)
        line.append(UInt8(ascii: ":"))
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            line.append(UInt8(ascii: " "))
            line.append(contentsOf: key.utf8)
            line.append(UInt8(ascii: "="))
            line.append(contentsOf: value.description.utf8)
        }
        line.append(contentsOf: " [".utf8)
        line.append(contentsOf: event.source.utf8)
        line.append(contentsOf: "] ".utf8)
        line.append(contentsOf: event.message.description.utf8)
        line.append(UInt8(ascii: "\n"))
        return line
    }

    private func jsonLine(for event: LogEvent, metadata: Logger.Metadata, timestamp: String) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(160 + metadata.count * 32)
        line.append(UInt8(ascii: "{"))
        var first = true
        func key(_ name: String) {
            if !first { line.append(UInt8(ascii: ",")) }
            first = false
            JSONObjectWriter.appendString(name, to: &line)
            line.append(UInt8(ascii: ":"))
        }
        key("time")
        JSONObjectWriter.appendString(timestamp, to: &line)
        key("level")
        JSONObjectWriter.appendString(event.level.rawValue, to: &line)
        key("label")
        JSONObjectWriter.appendString(self.label, to: &line)
        key("source")
        JSONObjectWriter.appendString(event.source, to: &line)
        key("message")
        JSONObjectWriter.appendString(event.message.description, to: &line)
        for (name, value) in metadata.sorted(by: { $0.key < $1.key }) {
            key(name)
            Self.appendJSON(value, to: &line)
        }
        line.append(contentsOf: [UInt8(ascii: "}"), UInt8(ascii: "\n")])
        return line
    }

    /// A metadata value as JSON: strings as strings, integers and finite numbers as numbers,
    /// arrays and dictionaries nested.
    private static func appendJSON(_ value: Logger.Metadata.Value, to line: inout [UInt8]) {
        switch value {
        case .string(let text):
            JSONObjectWriter.appendString(text, to: &line)
        case .stringConvertible(let convertible):
            switch convertible {
            case let number as any BinaryInteger:
                line.append(contentsOf: "\(number)".utf8)
            case let number as Double where number.isFinite:
                line.append(contentsOf: "\(number)".utf8)
            default:
                JSONObjectWriter.appendString(convertible.description, to: &line)
            }
        case .array(let values):
            line.append(UInt8(ascii: "["))
            for (index, item) in values.enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                Self.appendJSON(item, to: &line)
            }
            line.append(UInt8(ascii: "]"))
        case .dictionary(let fields):
            line.append(UInt8(ascii: "{"))
            for (index, name) in fields.keys.sorted().enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                JSONObjectWriter.appendString(name, to: &line)
                line.append(UInt8(ascii: ":"))
                Self.appendJSON(fields[name]!, to: &line)
            }
            line.append(UInt8(ascii: "}"))
        }
    }

    /// The local time to the second, `2026-11-23T12:24:37+0000`, formatted once per second.
    static func timestamp() -> String {
        var now = time(nil)
        if let cached = Self.cache.withLock({ $0.second == now ? $0.text : nil }) {
            return cached
        }
        var local = tm()
        guard localtime_r(&now, &local) != nil else { return "<unknown>" }
        let text = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer -> String in
            let count = strftime(buffer.baseAddress!, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
            return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress!, count: count), as: UTF8.self)
        }
        Self.cache.withLock { $0 = (now, text) }
        return text
    }

    private static let cache = Mutex<(second: time_t, text: String)>((-1, ""))
}
