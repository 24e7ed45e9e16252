import Foundation
import SpoutEndpoints
import SpoutHTTP
import Testing

/// `server.cors` in the configuration file and its environment variables.
@Suite("CORS configuration")
struct CORSConfigurationTests {
    @Test("CORS is off by default, with the documented headers and max age")
    func defaults() throws {
        let shipped = try SpoutConfiguration.load(file: Repository.configFile, environment: [:])
        for configuration in [shipped, try SpoutConfiguration.parse("", file: "spout.yaml")] {
            #expect(configuration.server.cors.allowedOrigins.isEmpty)
            #expect(configuration.server.cors.allowedHeaders == CORSPolicy.defaultAllowedHeaders)
            #expect(configuration.server.cors.maxAgeSeconds == 600)
            #expect(!configuration.serverConfiguration.cors.isEnabled)
        }
    }

    @Test("values from the file reach the server's policy")
    func fileValues() throws {
        let yaml = """
            server:
              cors:
                allowedOrigins: [https://app.example.com, "http://localhost:3000"]
                allowedHeaders: [Content-Type, X-API-Key]
                maxAgeSeconds: 60
            """
        let policy = try SpoutConfiguration.parse(yaml, file: "spout.yaml").serverConfiguration.cors
        #expect(policy == CORSPolicy(
            allowedOrigins: ["https://app.example.com", "http://localhost:3000"], allowedHeaders: ["Content-Type", "X-API-Key"],
            maxAgeSeconds: 60))
        let any = try SpoutConfiguration.parse("server:\n  cors:\n    allowedOrigins: \"*\"\n", file: "spout.yaml")
        #expect(any.serverConfiguration.cors.allowsAnyOrigin)
        let empty = try SpoutConfiguration.parse("server:\n  cors:\n    allowedOrigins: []\n", file: "spout.yaml")
        #expect(!empty.serverConfiguration.cors.isEnabled)
    }

    @Test("environment variables take comma-separated lists; an empty one turns CORS off")
    func environment() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("spout.yaml", "server:\n  cors:\n    allowedOrigins: [https://file.example.com]\n")
        let table = Dictionary(uniqueKeysWithValues: SpoutConfiguration.environmentVariables.map { ($0.key, $0.variable) })
        #expect(table["server.cors.allowedOrigins"] == "SPOUT_CORS_ALLOWED_ORIGINS")
        #expect(table["server.cors.allowedHeaders"] == "SPOUT_CORS_ALLOWED_HEADERS")
        #expect(table["server.cors.maxAgeSeconds"] == "SPOUT_CORS_MAX_AGE_SECONDS")

        let fromFile = try SpoutConfiguration.load(file: file, environment: [:])
        #expect(fromFile.server.cors.allowedOrigins == ["https://file.example.com"])

        let overridden = try SpoutConfiguration.load(
            file: file,
            environment: [
                "SPOUT_CORS_ALLOWED_ORIGINS": " https://a.example.com, https://b.example.com:8443 ,",
                "SPOUT_CORS_ALLOWED_HEADERS": "Content-Type,Authorization",
                "SPOUT_CORS_MAX_AGE_SECONDS": "30",
            ])
        #expect(overridden.server.cors.allowedOrigins == ["https://a.example.com", "https://b.example.com:8443"])
        #expect(overridden.server.cors.allowedHeaders == ["Content-Type", "Authorization"])
        #expect(overridden.serverConfiguration.cors.maxAgeSeconds == 30)

        let off = try SpoutConfiguration.load(file: file, environment: ["SPOUT_CORS_ALLOWED_ORIGINS": ""])
        #expect(!off.serverConfiguration.cors.isEnabled)
    }

    @Test(
        "mistakes name the key, the line and the problem",
        arguments: [
            ("server:\n  cors:\n    allowOrigins: [x]\n", 3, "unknown key 'allowOrigins' in 'server.cors' (known keys: allowedOrigins, allowedHeaders, maxAgeSeconds)"),
            ("server:\n  cors:\n    allowedOrigins: [https://app.example.com/]\n", 3,
             "'server.cors.allowedOrigins': 'https://app.example.com/' is not an origin; write scheme://host or scheme://host:port without a path (https://app.example.com), or *"),
            ("server:\n  cors:\n    allowedOrigins:\n      - app.example.com\n", 4,
             "'server.cors.allowedOrigins': 'app.example.com' is not an origin; write scheme://host or scheme://host:port without a path (https://app.example.com), or *"),
            ("server:\n  cors:\n    allowedHeaders: [\"X Header\"]\n", 3, "'server.cors.allowedHeaders': 'X Header' is not a header name"),
            ("server:\n  cors:\n    maxAgeSeconds: 100000\n", 3, "'server.cors.maxAgeSeconds' must be in 0...86400, not 100000"),
            ("server:\n  hots: x\n", 2, "unknown key 'hots' in 'server' (known keys: host, port, limits, spool, cors, timingHeader, heartbeatSeconds, metrics)"),
        ])
    func fileErrors(yaml: String, line: Int, message: String) throws {
        let error = #expect(throws: ConfigurationError.self) {
            try SpoutConfiguration.parse(yaml, file: "config/spout.yaml")
        }
        #expect(error?.line == line)
        #expect(error?.message == message)
    }

    @Test("a bad environment value names the variable")
    func environmentErrors() throws {
        let origin = #expect(throws: ConfigurationError.self) {
            try SpoutConfiguration.load(file: Repository.configFile, environment: ["SPOUT_CORS_ALLOWED_ORIGINS": "https://ok.example, *.example.com"])
        }
        #expect(origin?.description.hasPrefix("environment: SPOUT_CORS_ALLOWED_ORIGINS: '*.example.com' is not an origin") == true)
        let age = #expect(throws: ConfigurationError.self) {
            try SpoutConfiguration.load(file: Repository.configFile, environment: ["SPOUT_CORS_MAX_AGE_SECONDS": "ten"])
        }
        #expect(age?.message == "SPOUT_CORS_MAX_AGE_SECONDS: must be an integer, not 'ten'")
    }
}
