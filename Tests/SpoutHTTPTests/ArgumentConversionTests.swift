import SpoutCore
import Testing

@testable import SpoutHTTP

@Suite("Argument conversion")
struct ArgumentConversionTests {
    private func convert(_ query: String, _ parameters: [Parameter]) throws(ArgumentError) -> [String: SQLValue] {
        try ArgumentConversion.convert(FormURLEncoding.parse(query), for: parameters)
    }

    private func body(of error: ArgumentError) -> String {
        String(decoding: error.body, as: UTF8.self)
    }

    @Test func everyType() throws {
        let values = try self.convert(
            "s=hi+there&i=-42&n=2.5&d=-12.50&b=TRUE&date=2024-02-29&dms=86400000&t=2024-05-01T12:00:00Z&tms=1000&u=zzz",
            [
                Parameter("s"), Parameter("i", .integer), Parameter("n", .number), Parameter("d", .decimal),
                Parameter("b", .boolean), Parameter("date", .date), Parameter("dms", .date), Parameter("t", .datetime),
                Parameter("tms", .datetime),
            ]
        )
        #expect(values["s"] == .text("hi there"))
        #expect(values["i"] == .integer(-42))
        #expect(values["n"] == .double(2.5))
        #expect(values["d"] == .decimal("-12.50"))
        #expect(values["b"] == .bool(true))
        #expect(values["date"] == .date(days: CivilTime.days(year: 2024, month: 2, day: 29)))
        #expect(values["dms"] == .date(days: 1))
        #expect(values["t"] == .timestamp(microseconds: CivilTime.parseTimestamp("2024-05-01 12:00:00")!))
        #expect(values["tms"] == .timestamp(microseconds: 1_000_000))
        #expect(values["u"] == nil)  // undeclared arguments are ignored
    }

    @Test func nulInTextIsRefusedNamingTheParameter() throws {
        let scalar = #expect(throws: ArgumentError.self) { try self.convert("name=a%00b", [Parameter("name")]) }
        #expect(scalar?.reason == .nulCharacter)
        #expect(scalar.map(self.body) == #"{"error":"text must not contain U+0000 (NUL)","parameter":"name","value":"a\u0000b"}"#)
        // In any element of a list; other types already refuse it as not converting.
        let element = #expect(throws: ArgumentError.self) { try self.convert("tags=x&tags=%00", [Parameter("tags", .list(.string))]) }
        #expect(element?.reason == .nulCharacter)
        let integer = #expect(throws: ArgumentError.self) { try self.convert("i=1%00", [Parameter("i", .integer)]) }
        #expect(integer?.reason == .invalid(.integer))
        // Other control characters are text like any other.
        #expect(try self.convert("name=a%01b%7F", [Parameter("name")])["name"] == .text("a\u{01}b\u{7F}"))
    }

    @Test func datesOutsideYearsOneToNineThousandNineHundredNinetyNineAreRefused() throws {
        let parameters = [Parameter("d", .date), Parameter("t", .datetime)]
        // The edges are accepted, in either spelling.
        let edges = try self.convert("d=0001-01-01&t=9999-12-31T23:59:59.999999Z", parameters)
        #expect(edges["d"] == .date(days: ParameterType.dayRange.lowerBound))
        #expect(edges["t"] == .timestamp(microseconds: (ParameterType.dayRange.upperBound + 1) * CivilTime.microsecondsPerDay - 1))
        #expect(try self.convert("d=-62135596800000", parameters)["d"] == .date(days: ParameterType.dayRange.lowerBound))
        for (query, name) in [
            ("d=0000-12-31", "d"), ("d=-62135596800001", "d"), ("d=253402300800000", "d"), ("d=-9223372036854775808", "d"),
            ("t=0000-12-31T23:59:59Z", "t"), ("t=0001-01-01T00:30:00%2B01:00", "t"), ("t=253402300800000", "t"),
        ] {
            let error = #expect(throws: ArgumentError.self, "\(query)") { try self.convert(query, parameters) }
            #expect(error?.parameter == name)
            guard case .outOfRange(let text) = error?.reason else {
                Issue.record("\(query): \(String(describing: error?.reason))")
                continue
            }
            #expect(text.hasPrefix(name == "d" ? "date out of range (0001-01-01 to 9999-12-31)" : "datetime out of range"))
        }
        let body = #expect(throws: ArgumentError.self) { try self.convert("d=0000-01-01", parameters) }
        #expect(body.map(self.body) == #"{"error":"date out of range (0001-01-01 to 9999-12-31)","parameter":"d","value":"0000-01-01"}"#)
    }

    @Test func limitsBoundEveryValueAndNameTheRangeInTheError() throws {
        let parameters = [
            Parameter("id", .integer, limits: ParameterLimits(minimum: .integer(1), maximum: .integer(2_147_483_647))),
            Parameter("ratio", .number, limits: ParameterLimits(minimum: .double(0))),
            Parameter("name", limits: ParameterLimits(minLength: 1, maxLength: 3)),
            Parameter("tags", .list(.string), limits: ParameterLimits(maxLength: 2)),
        ]
        let edges = try self.convert("id=2147483647&ratio=0&name=%C3%A9t%C3%A9&tags=ab&tags=", parameters)
        #expect(edges["id"] == .integer(2_147_483_647))
        #expect(edges["name"] == .text("été"))  // three characters, five bytes
        #expect(edges["tags"] == .array([.text("ab"), .text("")]))
        #expect(try self.convert("", parameters)["id"] == .null)  // absent values have nothing to bound
        for (query, name, text) in [
            ("id=2147483648", "id", "integer out of range (1 to 2147483647)"),
            ("id=0", "id", "integer out of range (1 to 2147483647)"),
            ("ratio=-0.5", "ratio", "number out of range (at least 0.0)"),
            ("name=abcd", "name", "text too long (1 to 3 characters)"),
            ("name=", "name", "text too short (1 to 3 characters)"),
            ("tags=ab&tags=abc", "tags", "text too long (at most 2 characters)"),
        ] {
            let error = #expect(throws: ArgumentError.self, "\(query)") { try self.convert(query, parameters) }
            #expect(error?.parameter == name, "\(query)")
            #expect(error?.description == text, "\(query)")
        }
        #expect(ParameterLimits(minimum: .integer(1), maximum: .integer(9), maxLength: 4).summary == "1 to 9; at most 4 characters")
        #expect(ParameterLimits().summary == nil)
        #expect(ParameterLimits(minLength: 4, maxLength: 4).violation(by: .text("d005 ")) == "text too long (exactly 4 characters)")
    }

    @Test func listsDefaultsAndOptionals() throws {
        let values = try self.convert(
            "details=titles&details=salaries&ids=1&ids=2",
            [
                Parameter("details", .list(.string), allowedValues: ["titles", "salaries"]),
                Parameter("ids", .list(.integer)), Parameter("none", .list(.integer)),
                Parameter("limit", .integer, defaultValue: 10), Parameter("name"),
            ]
        )
        #expect(values["details"] == .array([.text("titles"), .text("salaries")]))
        #expect(values["ids"] == .array([.integer(1), .integer(2)]))
        #expect(values["none"] == .array([]))
        #expect(values["limit"] == .integer(10))
        #expect(values["name"] == .null)
    }

    @Test func emptyValueIsAbsentExceptForStrings() throws {
        let values = try self.convert("n=&s=", [Parameter("n", .integer), Parameter("s")])
        #expect(values["n"] == .null)
        #expect(values["s"] == .text(""))
    }

    @Test func invalidValueBody() {
        do {
            _ = try self.convert("employeeNumber=abc", [Parameter("employeeNumber", .integer, required: true)])
            Issue.record("no error")
        } catch {
            #expect(self.body(of: error) == #"{"error":"invalid integer","parameter":"employeeNumber","value":"abc"}"#)
        }
    }

    @Test(arguments: [
        ("n", ParameterType.number, "nan", "invalid number"), ("n", .number, "0x1p3", "invalid number"),
        ("d", .decimal, "1.2.3", "invalid decimal"), ("b", .boolean, "yes", "invalid boolean"),
        ("day", .date, "2023-02-29", "invalid date"), ("t", .datetime, "2024-05-01T25:00:00", "invalid datetime"),
        ("ids", .list(.integer), "1x", "invalid integer"), ("i", .integer, "99999999999999999999", "invalid integer"),
    ])
    func invalidValues(name: String, type: ParameterType, value: String, message: String) {
        do {
            _ = try ArgumentConversion.convert(RawArguments([(name, value)]), for: [Parameter(name, type)])
            Issue.record("no error for \(value)")
        } catch {
            #expect(error.description == message)
            #expect(error.parameter == name)
            #expect(error.value == value)
        }
    }

    @Test func missingRequiredBody() {
        do {
            _ = try self.convert("other=1", [Parameter("employeeNumber", .integer, required: true)])
            Issue.record("no error")
        } catch {
            #expect(self.body(of: error) == #"{"error":"missing required parameter","parameter":"employeeNumber"}"#)
        }
        // A bare key or an empty value is still missing.
        #expect(throws: ArgumentError.self) { try self.convert("n", [Parameter("n", .integer, required: true)]) }
        #expect(throws: ArgumentError.self) { try self.convert("n=", [Parameter("n", .integer, required: true)]) }
    }

    @Test func notAllowedBody() {
        do {
            _ = try self.convert("details=titles&details=bonus", [Parameter("details", .list(.string), allowedValues: ["titles", "salaries"])])
            Issue.record("no error")
        } catch {
            #expect(
                self.body(of: error)
                    == #"{"error":"value not allowed","parameter":"details","value":"bonus","allowed":["titles","salaries"]}"#
            )
        }
    }

    @Test func allowedValuesCompareConvertedValues() throws {
        let parameter = Parameter("level", .integer, allowedValues: [1, 2, 3])
        #expect(try self.convert("level=%2B2", [parameter])["level"] == .integer(2))
        #expect(throws: ArgumentError.self) { try self.convert("level=4", [parameter]) }
    }

    @Test func aJSONArrayGoesOnlyToAListParameter() throws {
        func json(_ text: String) throws(ArgumentError) -> RawArguments {
            try BodyArguments.parse(Array(text.utf8), contentType: "application/json")
        }
        let parameters = [Parameter("name"), Parameter("ids", .list(.integer))]
        let lists = try ArgumentConversion.convert(json(#"{"name":"Rex","ids":[1,2]}"#), for: parameters)
        #expect(lists["ids"] == .array([.integer(1), .integer(2)]))
        #expect(try ArgumentConversion.convert(json(#"{"ids":[]}"#), for: parameters)["ids"] == .array([]))
        #expect(try ArgumentConversion.convert(json(#"{"ids":7}"#), for: parameters)["ids"] == .array([.integer(7)]))
        // An array for one value is refused, even of one element: which was meant is unknown.
        for body in [#"{"name":["a","b"]}"#, #"{"name":["a"]}"#, #"{"name":[]}"#] {
            let error = #expect(throws: ArgumentError.self, "\(body)") { try ArgumentConversion.convert(json(body), for: parameters) }
            #expect(error.map(self.body) == #"{"error":"one value expected, not an array","parameter":"name"}"#, "\(body)")
        }
        // The request merges path, query and body arguments; the mark survives that.
        var merged = try FormURLEncoding.parse("ids=3")
        merged.merge(try json(#"{"name":["a"]}"#))
        #expect(throws: ArgumentError.self) { try ArgumentConversion.convert(merged, for: parameters) }
        // A member named twice is a malformed body, whichever parameter it is.
        let twice = #expect(throws: ArgumentError.self) { try json(#"{"name":"Bo","name":"Bo2"}"#) }
        #expect(twice?.description == "member 'name' appears twice in JSON body")
        // A repeated query key still means the first for one value.
        #expect(try self.convert("name=a&name=b", parameters)["name"] == .text("a"))
    }

    @Test func aBodyOfAnotherMediaTypeIsRefusedWhereArgumentsComeFromIt() throws {
        let json = Array(#"{"name":"Rex"}"#.utf8)
        // JSON under its structured-syntax suffix is JSON.
        #expect(try BodyArguments.parse(json, contentType: "application/vnd.api+json")["name"] == ["Rex"])
        #expect(try BodyArguments.parse(json, contentType: "Application/Merge-Patch+JSON; charset=utf-8")["name"] == ["Rex"])
        // JSON sent as a form (curl -d without a Content-Type) is named as such.
        let asForm = #expect(throws: ArgumentError.self) { try BodyArguments.parse(json, contentType: "application/x-www-form-urlencoded") }
        #expect(asForm.map { ErrorResponse(for: $0).status } == .badRequest)
        #expect(asForm?.description.hasPrefix("the body is JSON but was sent as application/x-www-form-urlencoded") == true)
        #expect(throws: ArgumentError.self) { try BodyArguments.parse(Array(" [1]".utf8), contentType: "application/x-www-form-urlencoded") }
        #expect(try BodyArguments.parse(Array("{x}=1".utf8), contentType: "application/x-www-form-urlencoded")["{x}"] == ["1"])
        // Another type, or none, is a 415 naming it; where the body is not for arguments, it is left alone.
        let plain = #expect(throws: ArgumentError.self) { try BodyArguments.parse(json, contentType: "text/plain; charset=utf-8") }
        #expect(plain.map { ErrorResponse(for: $0).status } == .unsupportedMediaType)
        #expect(plain.map(self.body) == #"{"error":"unsupported media type text/plain: send arguments as application/json, application/x-www-form-urlencoded or multipart/form-data"}"#)
        let untyped = #expect(throws: ArgumentError.self) { try BodyArguments.parse(json, contentType: nil) }
        #expect(untyped?.description.hasPrefix("a body without Content-Type") == true)
        #expect(try BodyArguments.parse(json, contentType: "text/plain", takesArguments: false).keys.isEmpty)
        #expect(try BodyArguments.parse([], contentType: "text/plain").keys.isEmpty)
    }

    @Test func malformedBodyIs400WithoutParameter() {
        do {
            _ = try BodyArguments.parse(Array("{".utf8), contentType: "application/json")
            Issue.record("no error")
        } catch {
            let response = ErrorResponse(for: error)
            #expect(response.status == 400)
            #expect(String(decoding: response.body, as: UTF8.self).hasPrefix(#"{"error":""#))
            #expect(!String(decoding: response.body, as: UTF8.self).contains("parameter"))
        }
    }

    @Test("bytes: Base64 text in either alphabet, with or without padding; anything else a 400 naming the parameter")
    func bytesFromBase64() throws {
        let photo = [Parameter("photo", .bytes)]
        // 0xFB 0xFF 0xBF is "+/+/" in the standard alphabet and "-_-_" in the URL-safe one.
        #expect(try self.convert("photo=%2B%2F%2B%2F", photo)["photo"] == .bytes([0xFB, 0xFF, 0xBF]))
        #expect(try self.convert("photo=-_-_", photo)["photo"] == .bytes([0xFB, 0xFF, 0xBF]))
        #expect(try self.convert("photo=aGk%3D", photo)["photo"] == .bytes(Array("hi".utf8)))
        #expect(try self.convert("photo=aGk", photo)["photo"] == .bytes(Array("hi".utf8)))
        #expect(try self.convert("photo=AA%3D%3D", photo)["photo"] == .bytes([0]))
        #expect(try self.convert("photo=", photo)["photo"] == .null)
        for invalid in ["a", "aGk%3D%3D", "a%3DGk", "aG+k", "a*bc", "AAAAA", "%3D%3D%3D%3D"] {
            let error = #expect(throws: ArgumentError.self, "\(invalid)") { try self.convert("photo=\(invalid)", photo) }
            #expect(error?.reason == .invalid(.bytes))
            #expect(error?.parameter == "photo")
        }
        // A long value is not echoed back.
        let long = #expect(throws: ArgumentError.self) { try self.convert("photo=" + String(repeating: "A", count: 81), photo) }
        #expect(long.map(self.body) == #"{"error":"invalid bytes: send Base64, or the file as a multipart part","parameter":"photo"}"#)
        let short = #expect(throws: ArgumentError.self) { try self.convert("photo=a", photo) }
        #expect(short.map(self.body) == #"{"error":"invalid bytes: send Base64, or the file as a multipart part","parameter":"photo","value":"a"}"#)
    }

    @Test("content (a multipart part, a body) goes to a bytes parameter as it is; not UTF-8, it is a 400 for any other")
    func contentAsItIs() throws {
        let binary: [UInt8] = [0xFF, 0xD8, 0xFF, 0x00, 0x0D, 0x0A, 0xC3]
        var raw = RawArguments()
        raw.appendContent(binary, for: "photo")
        raw.appendContent(Array("Grüße".utf8), for: "caption")
        raw.appendContent(Array("AAAA".utf8), for: "thumbnail")
        raw.appendContent([], for: "empty")
        let parameters = [
            Parameter("photo", .bytes), Parameter("caption"), Parameter("thumbnail", .bytes), Parameter("empty", .bytes),
        ]
        let values = try ArgumentConversion.convert(raw, for: parameters)
        #expect(values["photo"] == .bytes(binary))
        #expect(values["caption"] == .text("Grüße"))
        // Content is never Base64: a part of four letters is those four bytes.
        #expect(values["thumbnail"] == .bytes(Array("AAAA".utf8)))
        // An empty file input of a form is no file.
        #expect(values["empty"] == .null)
        let required = #expect(throws: ArgumentError.self) {
            try ArgumentConversion.convert(raw, for: [Parameter("empty", .bytes, required: true)])
        }
        #expect(required?.reason == .missing)
        let asText = #expect(throws: ArgumentError.self) { try ArgumentConversion.convert(raw, for: [Parameter("photo")]) }
        #expect(asText.map(self.body) == #"{"error":"invalid UTF-8","parameter":"photo"}"#)
        // Every part of a repeated key, for a list.
        var list = RawArguments()
        list.appendContent([1, 2], for: "pages")
        list.appendContent([0xFF], for: "pages")
        #expect(try ArgumentConversion.convert(list, for: [Parameter("pages", .list(.bytes))])["pages"] == .array([.bytes([1, 2]), .bytes([0xFF])]))
    }

    @Test("a route's body is one parameter: any type, or the declared one (type/* too), else a 415 naming both")
    func routeBody() throws {
        let photo = RouteBody(parameter: "photo", mediaType: "image/*")
        #expect(try photo.arguments([1, 2, 0xFF], contentType: "image/png").contents("photo") == [[1, 2, 0xFF]])
        #expect(try photo.arguments([1], contentType: "Image/JPEG; q=1").contents("photo") == [[1]])
        #expect(try photo.arguments([], contentType: nil).keys.isEmpty)
        let json = #expect(throws: ArgumentError.self) { try photo.arguments([1], contentType: "application/json") }
        #expect(json.map { ErrorResponse(for: $0).status } == .unsupportedMediaType)
        #expect(json.map(self.body) == #"{"error":"unsupported media type application/json: send the body as image/*","parameter":"photo"}"#)
        let untyped = #expect(throws: ArgumentError.self) { try photo.arguments([1], contentType: nil) }
        #expect(untyped.map(self.body) == #"{"error":"a body without Content-Type: send it as image/*","parameter":"photo"}"#)
        #expect(throws: ArgumentError.self) { try photo.arguments([1], contentType: "imagex/png") }
        let exact = RouteBody(parameter: "doc", mediaType: "application/pdf")
        #expect(exact.accepts("application/pdf"))
        #expect(!exact.accepts("application/pdfx"))
        #expect(RouteBody(parameter: "any").accepts(nil))
        // The body's parameters come from the body alone: the query's values for them are dropped.
        let typed = RouteBody(parameter: "photo", mediaType: "image/*", mediaTypeParameter: "photoType")
        let query = try FormURLEncoding.parse("photo=AAAA&photoType=text/html&name=x")
        let replaced = try typed.arguments([1], contentType: "Image/PNG; x=1", replacingIn: query)
        #expect(replaced.contents("photo") == [[1]])
        #expect(replaced["photoType"] == ["image/png"])
        #expect(replaced["name"] == ["x"])
        let bodiless = try typed.arguments([], contentType: nil, replacingIn: query)
        #expect(!bodiless.contains("photo") && !bodiless.contains("photoType") && bodiless.keys == ["name"])
    }
}
