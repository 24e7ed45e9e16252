import Foundation
import SpoutEndpoints
import SpoutTestSupport
import Testing

/// A token signed by another library (Python's PyJWT) verifies, and the same token with its
/// payload changed does not: Spout's verification agrees with an independent implementation.
///
/// Needs the Python module: `python3 -m pip install pyjwt` (scripts/test installs it). Without
/// it the test is skipped, except under `CI=true`, where it fails, unless scripts/test reported
/// that pip could not install it (`SPOUT_UNAVAILABLE_TOOLS`).
@Suite("PyJWT tokens")
struct PyJWTTokenTests {
    static let pyjwt = PythonModule(module: "jwt", package: "pyjwt")
    static let secret = "a-secret-shared-with-pyjwt-0123456789"

    @Test("an HS256 token signed by PyJWT verifies; a changed one does not",
          .enabled(if: Self.pyjwt.isAvailable || Self.pyjwt.isRequired, "python3 module jwt missing: python3 -m pip install pyjwt"))
    func pyjwtToken() async throws {
        try #require(Self.pyjwt.isAvailable, "python3 module jwt missing (required under CI=true): python3 -m pip install pyjwt")
        let script = """
            import jwt, sys, time
            print(jwt.encode({"sub": "Gwen", "role": "editor", "exp": int(time.time()) + 600, "n": 1.5}, sys.argv[1], algorithm="HS256"))
            """
        let result = try await ChildProcess.run(executable: "/usr/bin/env", arguments: ["python3", "-c", script, Self.secret])
        #expect(result.status == 0)
        let token = result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        let verifier = try TokenVerifier(identity: .init(), secret: Self.secret, jwks: nil)
        let claims = try await verifier.verify(token).get()
        #expect(claims.claims["sub"] == .string("Gwen"))
        #expect(claims.claims["role"] == .string("editor"))
        #expect(claims.claims["n"] == .number(1.5))

        let parts = token.split(separator: ".").map(String.init)
        let forged = parts[0] + "." + Data(#"{"sub":"Diane"}"#.utf8).base64EncodedString()
            .replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "") + "." + parts[2]
        guard case .failure(let rejection) = await verifier.verify(forged) else {
            Issue.record("a changed PyJWT token verified")
            return
        }
        #expect(rejection.reason == "bad signature")
    }
}
