import HTTPTypes

/// A content coding Spout applies to response bodies itself (issue #31): to a stream in its
/// producer, off the event loop (``CompressionStage``), and to a body sent whole
/// (``encodeWhole(_:)``) as it is sent.
public enum ContentCoding: String, Sendable, CaseIterable {
    /// Zstandard (RFC 8878) at level 1: the smallest output of the three (about 0.85 × gzip's
    /// on JSON), so preferred when a client accepts it as readily as gzip.
    case zstd
    /// gzip at ISA-L's level 1 (igzip: deflate at about four times the speed of zlib's level
    /// 1, and smaller).
    case gzip
    /// deflate in zlib's format (RFC 9110 §8.4.1.2) at level 1: gzip's data in a smaller frame,
    /// for clients that ask for it alone.
    case deflate

    /// The level each coding is used at: each library's fast level, since a stream's producer
    /// compresses while the client waits; `docs/benchmarks.md` ("Compressed streams") has the
    /// speeds and sizes.
    var level: Int32 {
        switch self {
        case .zstd: 1
        case .gzip: 1
        case .deflate: 1
        }
    }

    /// The fewest bytes a body sent whole must have to be compressed: below it, a coding's
    /// frame (18 bytes of gzip's, 9–13 of zstd's) eats what it would save, and the body goes
    /// as it is, untagged by a coding and without `Vary`.
    public static let minimumWholeBody = 128

    /// How a body of `count` bytes sent whole with the head `fields` goes to a request that
    /// accepts `acceptEncoding` (the one owner of that rule): whether the response varies by
    /// `Accept-Encoding` (with `compression` on, a type worth compressing, at least
    /// ``minimumWholeBody`` bytes, and not coded by its producer already), and the coding it is
    /// sent in (nil: as it is; never for HEAD, which gets the identity head).
    static func forWholeBody(
        count: Int, fields: HTTPFields, acceptEncoding: String?, compression: Bool, isHead: Bool
    ) -> (varies: Bool, coding: ContentCoding?) {
        guard compression, count >= Self.minimumWholeBody, !fields.contains(.contentEncoding),
            Self.compresses(contentType: fields[.contentType] ?? "")
        else { return (false, nil) }
        return (true, isHead ? nil : Self.negotiate(acceptEncoding))
    }

    /// Whether a body of `contentType` is worth compressing: text (`text/*`), JSON, JSON Lines,
    /// XML and JavaScript (also `…+json`, `…+xml`). Anything else (images, PDFs, archives, a
    /// stored file of unknown type) is usually compressed already, and goes as it is.
    ///
    /// Every whole body above ``minimumWholeBody`` asks, so it reads the essence's bytes in place
    /// (``MediaType/essence(of:)`` makes a lower-cased copy).
    public static func compresses(contentType: String) -> Bool {
        var essence = contentType.utf8[...]
        if let semicolon = essence.firstIndex(of: UInt8(ascii: ";")) { essence = essence[..<semicolon] }
        essence = Self.trimmingBlanks(essence)
        let lowered = Self.asciiLowered
        func starts(_ prefix: StaticString) -> Bool {
            let prefix = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
            return essence.count >= prefix.count && zip(essence, prefix).allSatisfy { lowered($0) == $1 }
        }
        func ends(_ suffix: StaticString) -> Bool {
            let suffix = UnsafeBufferPointer(start: suffix.utf8Start, count: suffix.utf8CodeUnitCount)
            return essence.count >= suffix.count && zip(essence.suffix(suffix.count), suffix).allSatisfy { lowered($0) == $1 }
        }
        func equals(_ type: StaticString) -> Bool { essence.count == type.utf8CodeUnitCount && starts(type) }
        return starts("text/") || ends("+json") || ends("+xml") || equals("application/json") || equals("application/x-ndjson")
            || equals("application/xml") || equals("application/javascript")
    }

    /// The coding to use for a request with this `Accept-Encoding` value, or nil for none
    /// (identity).
    ///
    /// Rules (RFC 9110 §12.5.3): codings are compared by their `q` (default 1; `q=0` refuses);
    /// `*` stands for every coding not named; `x-gzip` is `gzip`; on equal `q` zstd wins over
    /// gzip, and gzip over deflate. No field, or no acceptable coding, is identity (Spout never
    /// answers 406 for this).
    public static func negotiate(_ acceptEncoding: String?) -> ContentCoding? {
        guard let acceptEncoding else { return nil }
        var weights: [String: Double] = [:]
        for item in acceptEncoding.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingBlanks.lowercased() }
            guard var name = parts.first, !name.isEmpty else { continue }
            if name == "x-gzip" { name = "gzip" }
            var weight = 1.0
            for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
                weight = Double(parameter.dropFirst(2)) ?? 0
            }
            weights[name] = max(weights[name] ?? 0, min(max(weight, 0), 1))
        }
        var best: (coding: ContentCoding, weight: Double)?
        for coding in Self.allCases {
            let weight = weights[coding.rawValue] ?? weights["*"] ?? 0
            if weight > 0 && weight > (best?.weight ?? 0) { best = (coding, weight) }
        }
        return best?.coding
    }

    /// A new encoder of this coding for a stream.
    func makeEncoder() throws -> any StreamEncoder {
        switch self {
        case .zstd: try ZstdStreamEncoder(level: self.level)
        case .gzip: DeflateStreamEncoder(level: self.level, framing: .gzip)
        case .deflate: DeflateStreamEncoder(level: self.level, framing: .zlib)
        }
    }

    /// `body` in this coding, in one call (a body sent whole): zstd with the body's size
    /// pledged (its tables sized to it), gzip and deflate by ISA-L's one-shot compressor.
    func encodeWhole(_ body: [UInt8]) throws -> [UInt8] {
        switch self {
        case .zstd: try ZstdStreamEncoder(level: self.level, size: body.count).finish(body)
        case .gzip: try DeflateStreamEncoder.compressWhole(body, level: self.level, framing: .gzip)
        case .deflate: try DeflateStreamEncoder.compressWhole(body, level: self.level, framing: .zlib)
        }
    }

    /// Marks `fields` as those of this coding's representation: its `ETag` gets the coding's
    /// mark (``EntityTag/marking(_:coding:)``), so each representation has its own tag, and
    /// `Vary` names `Accept-Encoding`. (`Content-Encoding` is the caller's: a 304 has none.)
    func mark(_ fields: inout HTTPFields) {
        if let tag = fields[values: .eTag].first { fields.replaceOrAdd(.eTag, EntityTag.marking(tag, coding: self)) }
        Self.varyByAcceptEncoding(&fields)
    }

    /// Adds `Accept-Encoding` to `Vary` unless a `Vary` field names it already: the body that
    /// goes with `fields` depends on the request's `Accept-Encoding`.
    static func varyByAcceptEncoding(_ fields: inout HTTPFields) {
        let values = fields[values: .vary]
        guard !values.contains(where: Self.namesAcceptEncoding) else { return }
        fields.replaceOrAdd(.vary, values.first.map { $0 + ", Accept-Encoding" } ?? "Accept-Encoding")
    }

    /// Whether a `Vary` value lists `Accept-Encoding` (in any case). Every whole body above
    /// ``minimumWholeBody`` asks, so it reads the value's bytes in place: no Foundation (whose
    /// `range(of:)` goes through `NSString` on Linux), no `Character`s, no trimmed copies.
    static func namesAcceptEncoding(_ value: String) -> Bool {
        var rest = value.utf8[...]
        while true {
            let end = rest.firstIndex(of: UInt8(ascii: ",")) ?? rest.endIndex
            let item = Self.trimmingBlanks(rest[..<end])
            if item.elementsEqual("accept-encoding".utf8, by: { Self.asciiLowered($0) == $1 }) { return true }
            guard end < rest.endIndex else { return false }
            rest = rest[rest.index(after: end)...]
        }
    }

    /// `bytes` without the spaces and tabs at either end (a field value's blanks, RFC 9110 §5.6.3).
    private static func trimmingBlanks(_ bytes: Substring.UTF8View) -> Substring.UTF8View {
        var bytes = bytes
        while let first = bytes.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { bytes.removeFirst() }
        while let last = bytes.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { bytes.removeLast() }
        return bytes
    }

    /// `byte` in lower case when it is an ASCII capital letter; any other byte as it is.
    private static func asciiLowered(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}
