import HTTPTypes
import Testing

@testable import SpoutHTTP
import SpoutTestSupport

/// ``ContentCoding``: which coding a request gets, bodies encoded whole (decoded by the real
/// `zstd`, `gzip` and Python's `zlib`), and the marks a coded representation carries.
@Suite("Content codings")
struct ContentCodingTests {
    @Test("Accept-Encoding picks by q, then zstd, gzip, deflate")
    func negotiation() {
        let cases: [(String?, ContentCoding?)] = [
            (nil, nil), ("", nil), ("identity", nil), ("br", nil),
            ("deflate", .deflate), ("gzip, deflate", .gzip), ("deflate, gzip, zstd", .zstd),
            ("gzip, deflate;q=0.9", .gzip), ("gzip;q=0.5, deflate", .deflate), ("x-gzip", .gzip),
            ("*", .zstd), ("zstd;q=0, *", .gzip), ("zstd;q=0, gzip;q=0, *;q=0.2", .deflate), ("DEFLATE", .deflate),
        ]
        for (field, coding) in cases {
            #expect(ContentCoding.negotiate(field) == coding, "\(field ?? "none")")
        }
    }

    /// Sizes from nothing to past a deflate window (32 KiB) and a stored block (65,535 bytes).
    static let sizes = [0, 1, 127, 250, 251, 300, 767, 768, 1_000, 4_000, 20_000, 32_506, 32_507, 70_000]

    @Test("a body encoded whole decodes to itself, at every size", arguments: ContentCoding.allCases)
    func wholeBodies(_ coding: ContentCoding) throws {
        for size in Self.sizes {
            // Repetitive with some variety, like JSON rows: matches near and far.
            let text = (0..<(size / 20 + 1)).map { #"{"n":\#($0 % 97),"k":"v"}"# }.joined(separator: ",")
            let body = Array(text.utf8.prefix(size))
            let encoded = try coding.encodeWhole(body)
            #expect(try CompressionStageTests.decode(encoded, coding) == body, "\(coding) \(size)")
            if size >= 4_000 { #expect(encoded.count < body.count / 4, "\(coding) \(size): \(encoded.count)") }
        }
    }

    /// Bytes no coding can shrink: the one-shot compressors must have room for them stored
    /// (gzip's and deflate's output buffer is sized for that, not for a compressed body).
    @Test("an incompressible body encoded whole decodes to itself", arguments: ContentCoding.allCases)
    func incompressibleWholeBodies(_ coding: ContentCoding) throws {
        var generator = SystemRandomNumberGenerator()
        for size in [1, 200, 65_535, 65_536, 200_000] {
            let body = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let encoded = try coding.encodeWhole(body)
            #expect(try CompressionStageTests.decode(encoded, coding) == body, "\(coding) \(size)")
            #expect(encoded.count <= body.count + body.count / 1_000 + 64, "\(coding) \(size): \(encoded.count)")
        }
    }

    @Test("a coded representation's tag carries the coding once; If-None-Match ignores the mark")
    func tags() {
        let tag = EntityTag(opaque: "0123abcd", isWeak: false)
        for coding in ContentCoding.allCases {
            let marked = EntityTag.marking(tag.description, coding: coding)
            #expect(marked == "\"0123abcd-\(coding.rawValue)\"")
            #expect(EntityTag.marking(marked, coding: .gzip) == marked)
            #expect(tag.isMatched(byIfNoneMatch: marked))
        }
        // Tags made when NIO's compressor encoded whole bodies (`-z`) still match.
        #expect(tag.isMatched(byIfNoneMatch: "\"0123abcd-z\""))
        #expect(!tag.isMatched(byIfNoneMatch: "\"0123abce-gzip\""))

        var fields: HTTPFields = [.eTag: tag.description, .vary: "Accept"]
        ContentCoding.deflate.mark(&fields)
        #expect(fields[.eTag] == "\"0123abcd-deflate\"")
        #expect(fields[values: .vary] == ["Accept, Accept-Encoding"])
        ContentCoding.deflate.mark(&fields)
        #expect(fields[values: .vary] == ["Accept, Accept-Encoding"])
        var bare = HTTPFields()
        ContentCoding.varyByAcceptEncoding(&bare)
        #expect(bare[values: .vary] == ["Accept-Encoding"])
    }

    @Test("Vary lists Accept-Encoding: a whole token, in any case, between any blanks")
    func varyTokens() {
        for value in ["Accept-Encoding", "accept-encoding", "Accept, Accept-Encoding", " ACCEPT-ENCODING ,Origin", "Origin,\taccept-Encoding"] {
            #expect(ContentCoding.namesAcceptEncoding(value), "\(value)")
        }
        for value in ["", ",", "Accept", "Accept-Encodings", "X-Accept-Encoding", "Accept Encoding", "accept-encodinG2", "Origin, Accept"] {
            #expect(!ContentCoding.namesAcceptEncoding(value), "\(value)")
        }
        var other: HTTPFields = [.vary: "origin"]
        other.append(HTTPField(name: .vary, value: "accept-encoding"))
        ContentCoding.varyByAcceptEncoding(&other)
        #expect(other[values: .vary] == ["origin", "accept-encoding"])
    }
}
