import HTTPTypes
import SpoutHTTP
import Testing

/// The constant-time comparison and the credential rules, for correctness (not timing).
@Suite("API key checks")
struct APIKeySetTests {
    @Test("equal byte strings compare equal, whatever their length")
    func equalStrings() {
        #expect(ConstantTime.equals([], []))
        #expect(ConstantTime.equals(Array("k".utf8), Array("k".utf8)))
        let long = [UInt8](repeating: 0x61, count: ConstantTime.minimumWidth * 3 + 7)
        #expect(ConstantTime.equals(long, long))
        let exact = [UInt8](repeating: 0x7A, count: ConstantTime.minimumWidth)
        #expect(ConstantTime.equals(exact, exact))
    }

    @Test("any difference is found: first, middle or last byte, or length")
    func differences() {
        let key = Array("s3cret-key-0123456789".utf8)
        for index in key.indices {
            var other = key
            other[index] ^= 0x01
            #expect(!ConstantTime.equals(key, other), "byte \(index)")
        }
        #expect(!ConstantTime.equals(key, Array(key.dropLast())))
        #expect(!ConstantTime.equals(key, key + [0]))
        #expect(!ConstantTime.equals([], [0]))
        // Zero padding must not make a prefix equal to a zero-extended string.
        #expect(!ConstantTime.equals([0x41], [0x41, 0x00]))
        let long = [UInt8](repeating: 0x61, count: ConstantTime.minimumWidth + 10)
        var longer = long
        longer[ConstantTime.minimumWidth + 9] = 0x62
        #expect(!ConstantTime.equals(long, longer))
        #expect(!ConstantTime.equals(long, Array(long.prefix(ConstantTime.minimumWidth))))
    }

    @Test("every key is accepted, nothing else is")
    func keySet() throws {
        let keys = try #require(APIKeySet(keys: ["first-key", "second-key", "third"]))
        #expect(keys.count == 3)
        #expect(keys.matches("first-key"))
        #expect(keys.matches("second-key"))
        #expect(keys.matches("third"))
        #expect(!keys.matches("first-ke"))
        #expect(!keys.matches("first-keyy"))
        #expect(!keys.matches("FIRST-KEY"))
        #expect(!keys.matches(""))
        #expect(APIKeySet(keys: []) == nil)
        #expect(APIKeySet(keys: [""]) == nil)
    }

    @Test("credentials: Bearer first, then X-API-Key; blanks and the scheme's case do not matter")
    func credentials() throws {
        let keys = try #require(APIKeySet(keys: ["k-1", "k-2"]))
        #expect(keys.check(authorization: "Bearer k-1", apiKey: nil) == .granted)
        #expect(keys.check(authorization: "bearer   k-2 ", apiKey: nil) == .granted)
        #expect(keys.check(authorization: "BEARER\tk-1", apiKey: nil) == .granted)
        #expect(keys.check(authorization: nil, apiKey: " k-2") == .granted)
        #expect(keys.check(authorization: "Bearer wrong", apiKey: nil) == .invalidCredentials)
        #expect(keys.check(authorization: nil, apiKey: "wrong") == .invalidCredentials)
        // A bearer token, when present, is the credential.
        #expect(keys.check(authorization: "Bearer wrong", apiKey: "k-1") == .invalidCredentials)
        #expect(keys.check(authorization: "Bearer k-1", apiKey: "wrong") == .granted)
        // Other schemes and empty values are no credential.
        #expect(keys.check(authorization: "Basic azE6eA==", apiKey: nil) == .missingCredentials)
        #expect(keys.check(authorization: "Basic azE6eA==", apiKey: "k-1") == .granted)
        #expect(keys.check(authorization: "Bearer", apiKey: nil) == .missingCredentials)
        #expect(keys.check(authorization: "Bearer   ", apiKey: "") == .missingCredentials)
        #expect(keys.check(authorization: "Bearerk-1", apiKey: nil) == .missingCredentials)
        #expect(keys.check(authorization: nil, apiKey: nil) == .missingCredentials)
        #expect(keys.check([HTTPField.Name("authorization")!: "Bearer k-2"]) == .granted)
        #expect(keys.check([HTTPField.Name("x-api-key")!: "k-1"]) == .granted)
    }

    @Test("refusals: 401 with WWW-Authenticate, 403; JSON bodies without the key")
    func refusals() throws {
        let missing = try #require(APIKeySet.errorResponse(for: .missingCredentials))
        #expect(missing.status == 401)
        #expect(missing.headers[.wwwAuthenticate] == #"Bearer realm="spout""#)
        #expect(String(decoding: missing.body, as: UTF8.self).hasPrefix(#"{"error":"missing credentials"#))
        let invalid = try #require(APIKeySet.errorResponse(for: .invalidCredentials))
        #expect(invalid.status == 403)
        #expect(String(decoding: invalid.body, as: UTF8.self) == #"{"error":"invalid credentials"}"#)
        #expect(APIKeySet.errorResponse(for: .granted) == nil)
    }

    @Test("descriptions, debug descriptions and dumps never show a key")
    func noDisclosure() throws {
        let keys = try #require(APIKeySet(keys: ["super-secret-value"]))
        var dumped = ""
        dump(keys, to: &dumped)
        for text in [keys.description, String(reflecting: keys), "\(keys)", dumped] {
            #expect(!text.contains("super-secret"), "\(text)")
        }
        #expect(keys.description == "APIKeySet(1 key)")
    }
}
