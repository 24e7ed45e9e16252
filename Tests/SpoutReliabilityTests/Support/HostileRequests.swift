import Foundation
import SpoutTestSupport

/// One hostile request and what the server owes it.
struct HostileRequest {
    enum Kind: String {
        /// A well-formed HTTP request with bad or malicious values: it must get an answer, below 500.
        case wellFormed
        /// Broken HTTP: an answer below 500, or the connection closed without one.
        case malformed
    }

    var kind: Kind
    var bytes: [UInt8]
    /// A short description for failure messages.
    var label: String
}

/// Random and mutated requests against the shipped employees and pets endpoints.
///
/// Writes are built so that none may change the database: creations always name an existing
/// pet (`Fluffy`: 409) or are broken, updates and deletions name pets that do not exist. A
/// request that changes the database therefore shows a bug (an injection, a write on a wrong
/// path), not bad luck.
struct HostileRequests {
    var random: SeededGenerator

    init(seed: UInt64) {
        self.random = SeededGenerator(seed: seed)
    }

    static let injections = [
        "' OR '1'='1", "'; DROP TABLE pet; --", "1; DELETE FROM pet", "Fluffy' --", "\" OR 1=1 --",
        "1 UNION SELECT name, owner, species, sex FROM pet --", "'); DELETE FROM pet WHERE ('1'='1",
        "$1", "?1", ":name", "::text", "'||(SELECT pg_sleep(5))||'", "1)); DROP TABLE employees; --",
        "%' AND 1=0 UNION SELECT sqlite_version() --", "\\'; TRUNCATE pet; --", "/* */ OR /* */ 1=1",
    ]

    static let oddValues = [
        "", " ", "0", "-1", "99999999999999999999999999", "-9223372036854775809", "9223372036854775807",
        "1e309", "NaN", "-0", "0x10", "1.5", "２", "null", "true", "[]", "{}", "2020-13-45", "0000-00-00",
        "99999-01-01", "2020-02-30", "1970-01-01T00:00:00Z", "d005", "Fluffy", "Harold", "f", "x",
        String(repeating: "A", count: 3_000), String(repeating: "é", count: 800), "🐈‍⬛", "\u{202E}evil", "tab\there",
    ]

    /// Percent-encoded strings that do not decode to valid UTF-8, or do not decode at all.
    static let brokenEncodings = ["%", "%z", "%zz", "%4", "%%41", "%ff%fe", "%c3%28", "%ed%a0%80", "%f8%88%80%80%80", "%00", "a%00b", "%C0%AF"]

    mutating func pick<T>(_ items: [T]) -> T {
        items[Int.random(in: 0..<items.count, using: &self.random)]
    }

    mutating func chance(_ percent: Int) -> Bool {
        Int.random(in: 0..<100, using: &self.random) < percent
    }

    /// A query or path value: malicious, odd or broken, encoded or raw-ish.
    mutating func value() -> String {
        switch Int.random(in: 0..<4, using: &self.random) {
        case 0: return Self.percentEncoded(self.pick(Self.injections))
        case 1: return Self.percentEncoded(self.pick(Self.oddValues))
        case 2: return self.pick(Self.brokenEncodings)
        default: return Self.percentEncoded(self.pick(Self.injections)) + self.pick(Self.brokenEncodings)
        }
    }

    /// A value for a JSON or form body field (text, not encoded).
    mutating func fieldText() -> String {
        self.chance(50) ? self.pick(Self.injections) : self.pick(Self.oddValues)
    }

    mutating func next() -> HostileRequest {
        switch Int.random(in: 0..<100, using: &self.random) {
        case 0..<40: return self.get()
        case 40..<60: return self.write()
        case 60..<80: return self.mutatedGet()
        default: return self.malformed()
        }
    }

    /// GETs of every endpoint with hostile values in every parameter.
    mutating func get() -> HostileRequest {
        let targets = [
            "/employees/\(self.value())", "/employees/\(self.value())?details=\(self.value())",
            "/employees/10001?details=titles&details=\(self.value())",
            "/employees?lastName=\(self.value())&firstName=\(self.value())",
            "/employees?hiredAfter=\(self.value())&hiredBefore=\(self.value())",
            "/employees/\(self.value())/titles", "/employees/\(self.value())/salaries",
            "/departments/\(self.value())/employees?details=\(self.value())",
            "/pets?owner=\(self.value())", "/pets/\(self.value())", "/pets/\(self.value())?api",
            "/\(self.value())", "/pets?\(self.value())=\(self.value())", "/employees/10001?\(self.value())",
            "/pets?owner=\(self.value())&owner=\(self.value())", "/openapi.json?\(self.value())",
        ]
        let target = self.pick(targets)
        var headers: [(String, String)] = []
        if self.chance(30) {
            headers.append(("Accept", self.pick(["text/csv", "application/x-ndjson", "image/png", "*/*;q=x", "", "application/json;q=0"])))
        }
        if self.chance(20) { headers.append(("Accept-Encoding", self.pick(["gzip", "deflate", "br", "gzip;q=0", "x"]))) }
        return HostileRequest(kind: .wellFormed, bytes: RawHTTP.request("GET", target, headers: headers), label: "GET \(target.prefix(120))")
    }

    /// Writes that must all be refused or be no-ops. (Invalid UTF-8 goes in fields other than
    /// the name: see `InvalidUTF8Tests` for what happens to it.)
    mutating func write() -> HostileRequest {
        switch Int.random(in: 0..<7, using: &self.random) {
        case 0:
            // Create an existing pet with hostile fields: 409 or 400.
            var fields = [("name", "Fluffy")]
            for name in ["owner", "species", "sex", "birth", "death"] where self.chance(70) {
                fields.append((name, self.fieldText()))
            }
            let json = "{" + fields.map { "\(Self.jsonString($0.0)):\(Self.jsonString($0.1))" }.joined(separator: ",") + "}"
            return self.post("/pets", contentType: "application/json", body: Array(json.utf8))
        case 1:
            let form = ([("name", "Fluffy")] + [("owner", self.fieldText()), ("sex", self.fieldText()), ("birth", self.fieldText())])
                .map { "\($0.0)=\(Self.percentEncoded($0.1))" }.joined(separator: "&")
            return self.post("/pets", contentType: "application/x-www-form-urlencoded", body: Array(form.utf8))
        case 2:
            // Broken bodies: malformed JSON, broken encodings, wrong types.
            let bodies: [[UInt8]] = [
                Array(#"{"name":"zz-new","owner":"#.utf8), Array(#"{"name":"zz-new",}"#.utf8), Array("[".utf8) + Array(repeating: UInt8(ascii: "["), count: 20_000),
                Array(#"{"name":"zz-\#u{0}x"#.utf8), Array(#"{"name":"Fluffy","owner":""#.utf8) + [0xFF, 0xFE, 0xC3, 0x22, 0x7D],
                Array(#"{"name":"zz-new","birth":123456789012345678901234567890}"#.utf8), Array(#"{"name":"Fluffy","owner":"\ud800"}"#.utf8),
                Array("name=zz-new&birth=%zz".utf8), Array("name=Fluffy&owner=zz%ff%fe".utf8), Array("name".utf8), Array("=&=&&==".utf8),
                Array(#"{"name":"zz-new","sex":"q"}"#.utf8), Array(#"{"name":"zz-new","birth":"2020-02-30"}"#.utf8),
                Array("\u{0}\u{0}\u{0}".utf8), Array("null".utf8), Array("\"Fluffy\"".utf8),
            ]
            let contentType = self.pick(["application/json", "application/x-www-form-urlencoded", "application/json; charset=latin1"])
            return self.post("/pets", contentType: contentType, body: self.pick(bodies))
        case 3:
            // Broken multipart bodies.
            let boundary = "XyZ"
            let bodies = [
                "--XyZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nzz-new\r\n",  // no closing boundary
                "--XyZ\r\nContent-Disposition: form-data\r\n\r\nzz-new\r\n--XyZ--\r\n",  // no field name
                "--Other\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nzz-new\r\n--Other--\r\n",
                "--XyZ\r\n\r\n\r\n--XyZ--", "garbage", "--XyZ--\r\n",
                "--XyZ\r\nContent-Disposition: form-data; name=\"name\"\r\nContent-Type: text/plain; charset=utf-16\r\n\r\n\u{0}z\r\n",
            ]
            let contentType = self.pick(["multipart/form-data; boundary=\(boundary)", "multipart/form-data", "multipart/form-data; boundary="])
            return self.post("/pets", contentType: contentType, body: Array(self.pick(bodies).utf8))
        case 4:
            // Updates of pets that do not exist, with hostile names and fields.
            let name = "zz" + self.value()
            let json = #"{"owner":\#(Self.jsonString(self.fieldText())),"species":\#(Self.jsonString(self.fieldText()))}"#
            return self.post("/pets/\(name)", contentType: "application/json", body: Array(json.utf8))
        case 5:
            let target = "/pets/zz" + self.value()
            return HostileRequest(kind: .wellFormed, bytes: RawHTTP.request("DELETE", target), label: "DELETE \(target.prefix(120))")
        default:
            // Methods the endpoints do not have, or no body where one is expected.
            let method = self.pick(["PUT", "PATCH", "DELETE", "POST", "OPTIONS", "TRACE"])
            let target = self.pick(["/employees/10001", "/pets", "/salaries", "/openapi.json", "/health"])
            let request = method == "DELETE" && target == "/pets" ? "/pets/zz-none" : target
            return HostileRequest(kind: .wellFormed, bytes: RawHTTP.request(method, request), label: "\(method) \(request)")
        }
    }

    mutating func post(_ target: String, contentType: String, body: [UInt8]) -> HostileRequest {
        HostileRequest(
            kind: .wellFormed, bytes: RawHTTP.request("POST", target, headers: [("Content-Type", contentType)], body: body),
            label: "POST \(target.prefix(80)) \(contentType) \(String(decoding: body.prefix(60), as: UTF8.self))")
    }

    /// A valid GET with a few random byte edits (flip, insert, delete, NUL, high bytes).
    mutating func mutatedGet() -> HostileRequest {
        let base = self.pick([
            "/employees/10001?details=titles&details=salaries", "/employees?lastName=Facello", "/pets?owner=Harold",
            "/departments/d005/employees", "/pets/Fluffy", "/employees/10002/titles",
        ])
        var bytes = RawHTTP.request("GET", base)
        let headEnd = bytes.count - 4
        for _ in 0..<Int.random(in: 1...4, using: &self.random) {
            let index = Int.random(in: 0..<headEnd, using: &self.random)
            switch Int.random(in: 0..<4, using: &self.random) {
            case 0: bytes[index] ^= UInt8(1 << Int.random(in: 0..<8, using: &self.random))
            case 1: bytes.insert(self.pick([0x00, 0xFF, 0xC3, 0x25, 0x20, 0x0A, 0x0D, 0x3F, 0x26]), at: index)
            case 2: bytes.remove(at: index)
            default: bytes[index] = UInt8.random(in: 0...255, using: &self.random)
            }
        }
        // Whatever the edits did to the head, it ends, so the server never waits for more.
        if RawHTTP.find([13, 10, 13, 10], in: bytes, from: 0) == nil { bytes += [13, 10, 13, 10] }
        return HostileRequest(kind: .malformed, bytes: bytes, label: "mutated GET \(base)")
    }

    /// Broken HTTP: garbage, oversized heads and bodies, bad framing.
    mutating func malformed() -> HostileRequest {
        let cases: [(String, [UInt8])] = [
            ("random bytes", (0..<Int.random(in: 1...600, using: &self.random)).map { _ in UInt8.random(in: 0...255, using: &self.random) } + [13, 10, 13, 10]),
            ("NUL in request line", Array("GET /pets\u{0}x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8)),
            ("NUL in header", Array("GET /pets HTTP/1.1\r\nHost: a\r\nX-A: b\u{0}c\r\nConnection: close\r\n\r\n".utf8)),
            ("header without colon", Array("GET /pets HTTP/1.1\r\nHost a\r\nConnection: close\r\n\r\n".utf8)),
            ("overlong header", Array("GET /pets HTTP/1.1\r\nHost: a\r\nX-Long: \(String(repeating: "v", count: 40_000))\r\nConnection: close\r\n\r\n".utf8)),
            ("many headers", Array(("GET /pets HTTP/1.1\r\nHost: a\r\n" + (0..<2_000).map { "X-\($0): v\r\n" }.joined() + "Connection: close\r\n\r\n").utf8)),
            ("overlong target", Array("GET /pets?owner=\(String(repeating: "a", count: 40_000)) HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8)),
            ("overlong body", RawHTTP.request("POST", "/pets", headers: [("Content-Type", "application/json")], body: Array(repeating: UInt8(ascii: " "), count: 1_100_000))),
            ("huge content length", Array("POST /pets HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 99999999999999999999\r\nConnection: close\r\n\r\n{}".utf8)),
            ("negative content length", Array("POST /pets HTTP/1.1\r\nHost: a\r\nContent-Length: -5\r\nConnection: close\r\n\r\n".utf8)),
            ("two content lengths", Array("POST /pets HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{}".utf8)),
            ("bad chunk size", Array("POST /pets HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n{}\r\n0\r\n\r\n".utf8)),
            ("chunked and length", Array("POST /pets HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\nConnection: close\r\n\r\n0\r\n\r\n".utf8)),
            ("unknown method", Array("BREW /pets HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8)),
            ("lower-case method", Array("get /pets HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8)),
            ("absolute target", Array("GET http://evil.example/pets HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8)),
            ("asterisk target", Array("OPTIONS * HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8)),
            ("CONNECT", Array("CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8)),
            ("HTTP/2 preface", Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)),
            ("HTTP/9", Array("GET /pets HTTP/9.9\r\nHost: a\r\nConnection: close\r\n\r\n".utf8)),
            ("HTTP/1.0 no host", Array("GET /pets HTTP/1.0\r\n\r\n".utf8)),
            ("bare LF", Array("GET /pets HTTP/1.1\nHost: a\nConnection: close\n\n".utf8)),
            ("space in target", Array("GET /pets/Fl uffy HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8)),
            ("dot segments", Array("GET /pets/../../etc/passwd HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8)),
            ("raw high bytes in target", Array("GET /pets/".utf8) + [0xFF, 0xFE, 0xC3] + Array(" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8)),
            ("folded header", Array("GET /pets HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\nConnection: close\r\n\r\n".utf8)),
            ("empty request line", Array("\r\n\r\n".utf8)),
        ]
        let (label, bytes) = self.pick(cases)
        return HostileRequest(kind: .malformed, bytes: bytes, label: label)
    }

    static func percentEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    static func jsonString(_ text: String) -> String {
        var output = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case _ where scalar.value < 0x20: output += String(format: "\\u%04x", scalar.value)
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output + "\""
    }
}
