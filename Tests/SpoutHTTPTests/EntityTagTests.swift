import Testing

@testable import SpoutHTTP

/// ``EntityTag``'s comparisons: `If-None-Match` weak, `If-Match` strong (RFC 9110 §8.8.3.2),
/// both ignoring a coding's mark.
@Suite("Entity tags")
struct EntityTagTests {
    @Test("If-Match: *, a listed strong tag (a coding's mark aside); never a weak tag on either side")
    func ifMatch() {
        let tag = EntityTag(opaque: "0123abcd", isWeak: false)
        #expect(tag.isMatched(byIfMatch: "*"))
        #expect(tag.isMatched(byIfMatch: "\"0123abcd\""))
        #expect(tag.isMatched(byIfMatch: " \"ffff\" , \"0123abcd-gzip\" "))
        #expect(!tag.isMatched(byIfMatch: "W/\"0123abcd\""))
        #expect(!tag.isMatched(byIfMatch: "\"0123abce\""))
        #expect(!tag.isMatched(byIfMatch: "0123abcd"))
        let weak = EntityTag(opaque: "0123abcd", isWeak: true)
        #expect(!weak.isMatched(byIfMatch: "\"0123abcd\""))
        #expect(weak.isMatched(byIfMatch: "*"))
    }

    @Test("If-None-Match: *, or a listed tag, weak or strong")
    func ifNoneMatch() {
        let tag = EntityTag(opaque: "0123abcd", isWeak: false)
        #expect(tag.isMatched(byIfNoneMatch: "*"))
        #expect(tag.isMatched(byIfNoneMatch: "W/\"0123abcd\""))
        #expect(tag.isMatched(byIfNoneMatch: "\"x\", \"0123abcd-zstd\""))
        #expect(!tag.isMatched(byIfNoneMatch: "\"0123abce\""))
        #expect(!tag.isMatched(byIfNoneMatch: nil))
    }
}
