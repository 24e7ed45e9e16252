import Foundation
import Testing

@testable import SpoutClient

/// RFC 8288 `Link` parsing and the same-origin rule for following `rel="next"`.
@Suite struct LinkHeaderTests {
    @Test func spoutsNextLink() {
        let links = LinkHeader.parse("</employees?pageSize=7&after=OPAQUE>; rel=\"next\"")
        #expect(links == [WebLink(target: "/employees?pageSize=7&after=OPAQUE", parameters: ["rel": "next"])])
        #expect(LinkHeader.target(of: "next", in: ["</employees?pageSize=7&after=OPAQUE>; rel=\"next\""]) == "/employees?pageSize=7&after=OPAQUE")
    }

    @Test func severalLinksWithCommasInsideTargetsAndQuotes() {
        let value = #"<https://h/a?x=1,2>; rel="prev"; title="a, b", </b>;rel=next ; type="text/html", <c> ; rel="first last""#
        let links = LinkHeader.parse(value)
        #expect(links.map(\.target) == ["https://h/a?x=1,2", "/b", "c"])
        #expect(links[0].parameters == ["rel": "prev", "title": "a, b"])
        #expect(links[1].relations == ["next"])
        #expect(links[1].parameters["type"] == "text/html")
        #expect(links[2].relations == ["first", "last"])
        #expect(LinkHeader.target(of: "last", in: [value]) == "c")
    }

    @Test func relationsAreCaseInsensitiveAndTheFirstRelWins() {
        let links = LinkHeader.parse(#"</p2>; REL="Next"; rel="prev""#)
        #expect(links.first?.relations == ["next"])
        #expect(LinkHeader.target(of: "NEXT", in: [#"</p2>; REL="Next""#]) == "/p2")
    }

    @Test func escapedQuotesAndSeparateFieldValues() {
        let links = LinkHeader.parse([#"</a>; rel="next"; title="say \"hi\"""#, "</b>; rel=prev"])
        #expect(links.map(\.target) == ["/a", "/b"])
        #expect(links[0].parameters["title"] == #"say "hi""#)
    }

    @Test func malformedLinksAreSkipped() {
        #expect(LinkHeader.parse("garbage, </ok>; rel=next").map(\.target) == ["/ok"])
        #expect(LinkHeader.parse("<unterminated; rel=next").isEmpty)
        #expect(LinkHeader.parse("").isEmpty)
        #expect(LinkHeader.target(of: "next", in: ["</a>; rel=prev"]) == nil)
    }

    @Test func nextLinksResolveOnTheSameOriginOnly() throws {
        let current = try #require(URL(string: "http://127.0.0.1:8080/employees?pageSize=7"))
        #expect(try RequestTarget.resolve(link: "/employees?after=X", against: current).absoluteString == "http://127.0.0.1:8080/employees?after=X")
        #expect(try RequestTarget.resolve(link: "?after=Y", against: current).absoluteString == "http://127.0.0.1:8080/employees?after=Y")
        #expect(try RequestTarget.resolve(link: "http://127.0.0.1:8080/e?a=1", against: current).absoluteString == "http://127.0.0.1:8080/e?a=1")
        #expect(throws: SpoutClientError.self) { try RequestTarget.resolve(link: "http://example.invalid/e", against: current) }
        #expect(throws: SpoutClientError.self) { try RequestTarget.resolve(link: "http://127.0.0.1:9/e", against: current) }
        #expect(throws: SpoutClientError.self) { try RequestTarget.resolve(link: "https://127.0.0.1:8080/e", against: current) }
    }

    @Test func queryValuesArePercentEncoded() throws {
        let base = try #require(URL(string: "http://127.0.0.1:8080"))
        let url = try RequestTarget.url(base: base, path: "/pets", query: [URLQueryItem(name: "owner", value: "A&B +c=é")])
        #expect(url.absoluteString == "http://127.0.0.1:8080/pets?owner=A%26B%20%2Bc%3D%C3%A9")
    }
}
