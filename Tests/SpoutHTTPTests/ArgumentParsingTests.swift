import SpoutCore
import Testing

@testable import SpoutHTTP

@Suite("Query string and body parsing")
struct ArgumentParsingTests {
    @Test func queryStringDecoding() throws {
        let arguments = try FormURLEncoding.parse("name=J%C3%B6rg+Smith&details=titles&details=salaries&plus=a%2Bb&bad=%zz%4")
        #expect(arguments["name"] == ["Jörg Smith"])
        #expect(arguments["details"] == ["titles", "salaries"])
        #expect(arguments["plus"] == ["a+b"])
        #expect(arguments["bad"] == ["%zz%4"])
        #expect(arguments.keys == ["name", "details", "plus", "bad"])
    }

    @Test func invalidUTF8IsAnErrorNamingTheParameter() throws {
        let value = #expect(throws: ArgumentError.self) { try FormURLEncoding.parse("owner=Gwen&name=zz%ff%fe") }
        #expect(value?.reason == .invalidEncoding)
        #expect(value?.parameter == "name")
        #expect(String(decoding: value?.body ?? [], as: UTF8.self) == #"{"error":"invalid UTF-8","parameter":"name","value":"zz%ff%fe"}"#)
        let key = #expect(throws: ArgumentError.self) { try FormURLEncoding.parse("a%C3=1") }
        #expect(key?.parameter == "")
        // An overlong encoding and an encoded surrogate are not UTF-8 either.
        #expect(throws: ArgumentError.self) { try FormURLEncoding.parse("x=%C0%AF") }
        #expect(throws: ArgumentError.self) { try FormURLEncoding.parse("x=%ED%A0%80") }
        #expect(try FormURLEncoding.parse("x=%F0%9F%90%B1")["x"] == ["🐱"])
        // Bytes that arrive unescaped are checked as well: a key or value with nothing to
        // decode is still refused when it is not UTF-8, and a path segment gets U+FFFD.
        let raw = #expect(throws: ArgumentError.self) { try FormURLEncoding.parse(Array("a=1&name=zz".utf8) + [0xFF]) }
        #expect(raw?.parameter == "name")
        #expect(throws: ArgumentError.self) { try FormURLEncoding.parse([0xC3, UInt8(ascii: "="), UInt8(ascii: "1")]) }
        #expect(FormURLEncoding.decode([UInt8(ascii: "a"), 0xFF, UInt8(ascii: "+")], plusAsSpace: false) == "a\u{FFFD}+")
        #expect(FormURLEncoding.decode(Array("a+b%20c".utf8), plusAsSpace: true) == "a b c")
    }

    @Test func invalidUTF8InBodiesIsMalformed() throws {
        #expect(throws: ArgumentError.self) {
            try BodyArguments.parse(Array(#"{"name":"zz"#.utf8) + [0xFF] + Array(#""}"#.utf8), contentType: "application/json")
        }
        #expect(throws: ArgumentError.self) {
            try BodyArguments.parse(Array(#"{"name":"\ud800"}"#.utf8), contentType: "application/json")
        }
        #expect(throws: ArgumentError.self) {
            try BodyArguments.parse(Array(#"{"name":"\udc00x"}"#.utf8), contentType: "application/json")
        }
        let pair = try BodyArguments.parse(Array(#"{"name":"\ud83d\udc31"}"#.utf8), contentType: "application/json")
        #expect(pair["name"] == ["🐱"])
        let multipart = Array("--b\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n".utf8) + [0xC3] + Array("\r\n--b--\r\n".utf8)
        // A part is content: its bytes reach a bytes parameter as they are; any other refuses them.
        let parts = try BodyArguments.parse(multipart, contentType: "multipart/form-data; boundary=b")
        #expect(try ArgumentConversion.convert(parts, for: [Parameter("name", .bytes)])["name"] == .bytes([0xC3]))
        let text = #expect(throws: ArgumentError.self) { try ArgumentConversion.convert(parts, for: [Parameter("name")]) }
        #expect(text?.reason == .invalidEncoding && text?.parameter == "name")
    }

    @Test func bareKeyIsPresentWithoutValue() throws {
        let arguments = try FormURLEncoding.parse("api&x=&&y=1")
        #expect(arguments.contains("api"))
        #expect(arguments["api"] == [])
        #expect(arguments["x"] == [""])
        #expect(arguments["y"] == ["1"])
        #expect(!arguments.contains("z"))
        let request = Request(method: .get, path: "/employees", queryString: "api")
        #expect(request.hasQueryKey("api"))
        #expect(!request.hasQueryKey("other"))
    }

    @Test func formBody() throws {
        let body = Array("firstName=Ann+Lee&hireDate=2024-05-01&tags=a&tags=b".utf8)
        let arguments = try BodyArguments.parse(body, contentType: "application/x-www-form-urlencoded; charset=utf-8")
        #expect(arguments["firstName"] == ["Ann Lee"])
        #expect(arguments["tags"] == ["a", "b"])
    }

    @Test func multipartBody() throws {
        let body = Array(
            ("--XyZ\r\nContent-Disposition: form-data; name=\"firstName\"\r\n\r\nAnn\r\n"
                + "--XyZ\r\nContent-Disposition: form-data; name=\"tags\"\r\nContent-Type: text/plain\r\n\r\nline1\r\nline2\r\n"
                + "--XyZ\r\nContent-Disposition: form-data; name=\"tags\"; filename=\"t.txt\"\r\n\r\nfile\r\n"
                + "--XyZ--\r\n").utf8
        )
        let arguments = try BodyArguments.parse(body, contentType: "multipart/form-data; boundary=\"XyZ\"")
        #expect(arguments["firstName"] == ["Ann"])
        #expect(arguments["tags"] == ["line1\r\nline2", "file"])
    }

    @Test func multipartWithoutBoundaryIsAnError() {
        #expect(throws: ArgumentError.self) {
            try BodyArguments.parse(Array("x".utf8), contentType: "multipart/form-data")
        }
    }

    @Test func jsonBody() throws {
        let body = Array(
            #"{"name": "Ann \"A\" L\u00e9e", "n": 12, "x": -1.5e3, "ok": true, "gone": null, "list": ["a", 2, false], "empty": []}"#.utf8
        )
        let arguments = try BodyArguments.parse(body, contentType: "application/json")
        #expect(arguments["name"] == ["Ann \"A\" Lée"])
        #expect(arguments["n"] == ["12"])
        #expect(arguments["x"] == ["-1.5e3"])
        #expect(arguments["ok"] == ["true"])
        #expect(arguments.contains("gone") && arguments["gone"] == [])
        #expect(arguments["list"] == ["a", "2", "false"])
        #expect(arguments.contains("empty") && arguments["empty"] == [])
    }

    @Test(arguments: [#"[1,2]"#, #"{"a": {"b": 1}}"#, #"{"a": 1"#, #"{"a": 1} x"#, #"{"a": tru}"#, #"{"a": [[1]]}"#])
    func malformedJSONBodyIsAnError(_ text: String) {
        #expect(throws: ArgumentError.self) {
            try BodyArguments.parse(Array(text.utf8), contentType: "application/json")
        }
    }

    @Test func otherContentTypesCarryNoArgumentsWhereTheBodyIsNotForThem() throws {
        let arguments = try BodyArguments.parse(Array("a=1".utf8), contentType: "text/plain", takesArguments: false)
        #expect(arguments.keys.isEmpty)
    }
}
