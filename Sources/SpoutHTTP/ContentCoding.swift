/// A content coding Spout applies to streamed bodies itself, in the producer (issue #31).
///
/// Whole bodies (objects, pages, errors) are still compressed by NIO's `HTTPResponseCompressor`
/// on the event loop: they are small. Streams are where the bytes are, and compressing them on
/// the event loop stalled every other connection of that loop.
public enum ContentCoding: String, Sendable, CaseIterable {
    /// Zstandard (RFC 8878) at level 1: faster than gzip and smaller than gzip's default level.
    case zstd
    /// gzip at level 1 (zlib).
    case gzip

    /// The level each coding is used at: the fastest of each, since a stream's producer
    /// compresses while the client waits; `docs/benchmarks.md` has the sizes.
    var level: Int32 {
        switch self {
        case .zstd: 1
        case .gzip: 1
        }
    }

    /// The coding to use for a request with this `Accept-Encoding` value, or nil for none
    /// (identity).
    ///
    /// Rules (RFC 9110 §12.5.3): codings are compared by their `q` (default 1; `q=0` refuses);
    /// `*` stands for every coding not named; `x-gzip` is `gzip`; on equal `q` zstd wins. No
    /// field, or no acceptable coding, is identity (Spout never answers 406 for this).
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

    /// A new encoder of this coding.
    func makeEncoder() throws -> any StreamEncoder {
        switch self {
        case .zstd: try ZstdStreamEncoder(level: self.level)
        case .gzip: try GzipStreamEncoder(level: self.level)
        }
    }
}
