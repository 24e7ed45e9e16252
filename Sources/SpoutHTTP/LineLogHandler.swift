#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import SpoutCore
import Synchronization

/// A log handler that writes one line per entry to standard error, in swift-log's
/// `StreamLogHandler` format (a line break inside a value or message written as `\n` or `\r`,
/// so that an entry is always one line):
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

    /// Whether the handler adds nothing of its own to an entry (no metadata, no provider), so
    /// that an entry's fields alone make its line (``AccessLog``).
    var writesWithoutMetadata: Bool { self.metadata.isEmpty && self.metadataProvider == nil }

    /// Writes an access-log entry: the line ``log(event:)`` writes for the entry's level,
    /// message and metadata, from source `SpoutHTTP`. Checks no level.
    func write(_ entry: AccessLogEntry) {
        self.output(self.line(for: entry, timestamp: Self.timestamp()))
    }

    /// The line for `entry` (for tests: with a given timestamp).
    func line(for entry: AccessLogEntry, timestamp: String) -> [UInt8] {
        var line = LineBuilder(
            format: self.format, timestamp: timestamp, level: entry.level, label: self.label, source: "SpoutHTTP",
            message: entry.message.description, fieldCount: 10)
        entry.writeFields(to: &line)
        return line.finish()
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
        var line = LineBuilder(
            format: self.format, timestamp: timestamp, level: event.level, label: self.label, source: event.source,
            message: event.message.description, fieldCount: metadata.count)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            line.field(key, metadata: value)
        }
        return line.finish()
    }

    /// One line in either format, written front to back: the head, each field in the order
    /// given (the caller sorts them by key), then the tail. The one owner of both formats.
    struct LineBuilder {
        private var bytes: [UInt8] = []
        private let format: Format
        private let source: String
        private let message: String

        /// The head: in text `TIME LEVEL LABEL:`, in JSON the object's `time`, `level`,
        /// `label`, `source` and `message`.
        init(format: Format, timestamp: String, level: Logger.Level, label: String, source: String, message: String, fieldCount: Int) {
            self.format = format
            self.source = source
            self.message = message
            self.bytes.reserveCapacity(160 + fieldCount * 32)
            switch format {
            case .text:
                self.bytes.append(contentsOf: timestamp.utf8)
                self.bytes.append(UInt8(ascii: " "))
                self.bytes.append(contentsOf: level.rawValue.utf8)
                if !label.isEmpty { self.bytes.append(UInt8(ascii: " ")) }
                self.bytes.append(contentsOf: label.utf8)
                self.bytes.append(UInt8(ascii: ":"))
            case .json:
                self.bytes.append(contentsOf: #"{"time":"#.utf8)
                JSONText.appendString(timestamp, to: &self.bytes)
                self.bytes.append(contentsOf: #","level":"#.utf8)
                JSONText.appendString(level.rawValue, to: &self.bytes)
                self.bytes.append(contentsOf: #","label":"#.utf8)
                JSONText.appendString(label, to: &self.bytes)
                self.bytes.append(contentsOf: #","source":"#.utf8)
                JSONText.appendString(source, to: &self.bytes)
                self.bytes.append(contentsOf: #","message":"#.utf8)
                JSONText.appendString(message, to: &self.bytes)
            }
        }

        /// Starts a field: ` key=` in text, `,"key":` in JSON.
        private mutating func key(_ key: String) {
            switch self.format {
            case .text:
                self.bytes.append(UInt8(ascii: " "))
                self.bytes.append(contentsOf: key.utf8)
                self.bytes.append(UInt8(ascii: "="))
            case .json:
                self.bytes.append(UInt8(ascii: ","))
                JSONText.appendString(key, to: &self.bytes)
                self.bytes.append(UInt8(ascii: ":"))
            }
        }

        /// A text field: as it is in text (line breaks escaped), a JSON string in JSON.
        mutating func field(_ key: String, string: some StringProtocol) {
            self.key(key)
            switch self.format {
            case .text: self.appendText(string)
            case .json: JSONText.appendString(string, to: &self.bytes)
            }
        }

        /// Appends a value in the text format: as it is, except that a line break becomes `\n`
        /// or `\r`, so that an entry stays one line whatever its values hold (an error's
        /// description may span lines).
        private mutating func appendText(_ text: some StringProtocol) {
            let utf8 = text.utf8
            guard utf8.contains(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }) else {
                self.bytes.append(contentsOf: utf8)
                return
            }
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "\n"): self.bytes.append(contentsOf: #"\n"#.utf8)
                case UInt8(ascii: "\r"): self.bytes.append(contentsOf: #"\r"#.utf8)
                default: self.bytes.append(byte)
                }
            }
        }

        /// An integer field: its decimal digits in both formats (a JSON number).
        mutating func field(_ key: String, integer: Int) {
            self.key(key)
            self.bytes.append(contentsOf: String(integer).utf8)
        }

        /// A number field: Swift's description in text; in JSON a number when finite, else
        /// its description as a string.
        mutating func field(_ key: String, double: Double) {
            self.field(key, metadata: .stringConvertible(double))
        }

        /// A metadata value: its description in text; in JSON strings as strings, integers
        /// and finite numbers as numbers, arrays and dictionaries nested.
        mutating func field(_ key: String, metadata value: Logger.Metadata.Value) {
            self.key(key)
            switch self.format {
            case .text: self.appendText(value.description)
            case .json: LineLogHandler.appendJSON(value, to: &self.bytes)
            }
        }

        /// The line with its tail: ` [SOURCE] MESSAGE` and a newline in text, `}` and a
        /// newline in JSON.
        consuming func finish() -> [UInt8] {
            switch self.format {
            case .text:
                self.bytes.append(contentsOf: " [".utf8)
                self.bytes.append(contentsOf: self.source.utf8)
                self.bytes.append(contentsOf: "] ".utf8)
                self.appendText(self.message)
                self.bytes.append(UInt8(ascii: "\n"))
            case .json:
                self.bytes.append(UInt8(ascii: "}"))
                self.bytes.append(UInt8(ascii: "\n"))
            }
            return self.bytes
        }
    }

    /// A metadata value as JSON: strings as strings, integers and finite numbers as numbers,
    /// arrays and dictionaries nested.
    private static func appendJSON(_ value: Logger.Metadata.Value, to line: inout [UInt8]) {
        switch value {
        case .string(let text):
            JSONText.appendString(text, to: &line)
        case .stringConvertible(let convertible):
            switch convertible {
            case let number as any BinaryInteger:
                line.append(contentsOf: "\(number)".utf8)
            case let number as Double where number.isFinite:
                line.append(contentsOf: "\(number)".utf8)
            default:
                JSONText.appendString(convertible.description, to: &line)
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
                JSONText.appendString(name, to: &line)
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
