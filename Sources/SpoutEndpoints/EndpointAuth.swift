import HTTPTypes
import SpoutHTTP

/// The `auth` section of an endpoint file: its endpoints (or those of some methods) need an
/// API key, read from an environment variable at startup, or a verified bearer token (JWT).
///
/// ```yaml
/// auth:
///   keysFromEnvironment: SPOUT_PETS_API_KEYS   # comma-separated keys
///   methods: [POST, PUT, PATCH, DELETE]        # optional; default: every method
/// ```
///
/// ```yaml
/// auth:
///   token: jwt                  # a bearer token verified by the `identity` settings
///   methods: [POST, DELETE]     # optional; default: every method
///   anonymous: false            # optional; true serves requests without a token too
///   roles: [editor]             # optional; the token's role must be one of these (else 403)
/// ```
///
/// With `token: jwt`, the covered endpoints' SQL may use the token's claims as parameters
/// (`:claims.sub`); see ``TokenPolicy``.
///
/// Contract: a file with `auth` never loads without keys. An unset or empty variable, or one
/// whose keys are unusable, stops loading with a ``ConfigurationError`` naming the file and the
/// variable (never a key). This value holds what the section declares; the keys themselves
/// live only in the ``Endpoint/apiKeys`` of the endpoints it covers.
public struct EndpointAuth: Sendable, Hashable {
    /// The variable holding the keys (`SPOUT_PETS_API_KEYS`).
    public var environmentVariable: String
    /// The methods that need a key, sorted by name.
    public var methods: [HTTPRequest.Method]
    /// How many keys the variable holds.
    public var keyCount: Int

    /// With `token: jwt`: what a request's token must satisfy; nil for API keys.
    public var token: TokenPolicy?

    public init(environmentVariable: String, methods: [HTTPRequest.Method], keyCount: Int, token: TokenPolicy? = nil) {
        self.environmentVariable = environmentVariable
        self.methods = methods
        self.keyCount = keyCount
        self.token = token
    }

    /// Every method an endpoint file can declare: the default of `methods`.
    public static let allMethods: [HTTPRequest.Method] = [.delete, .get, .patch, .post, .put]

    /// Whether endpoints of `method` need a key.
    public func covers(_ method: HTTPRequest.Method) -> Bool {
        self.methods.contains(method)
    }

    /// The keys in an environment variable's value: comma-separated, blanks around each
    /// ignored, empty entries skipped.
    static func keys(in text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmedBlanks }.filter { !$0.isEmpty }
    }

    /// Whether `key` can travel in a header unchanged: visible ASCII only.
    static func isUsableKey(_ key: String) -> Bool {
        key.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    /// Whether `name` can be an environment variable: letters, digits and underscores, not
    /// starting with a digit.
    static func isVariableName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            byte == UInt8(ascii: "_") || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
    }
}
