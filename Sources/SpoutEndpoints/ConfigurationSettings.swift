import Foundation
import SpoutCore

extension SpoutConfiguration {
    /// One scalar (or list) key of the configuration file and its environment variable.
    struct Setting {
        enum Kind {
            case string(WritableKeyPath<SpoutConfiguration, String>)
            /// A string that may be empty (empty: the feature's own default, like a random secret).
            case optionalString(WritableKeyPath<SpoutConfiguration, String>)
            case integer(WritableKeyPath<SpoutConfiguration, Int>, ClosedRange<Int>)
            case boolean(WritableKeyPath<SpoutConfiguration, Bool>)
            case dateFormat
            /// The endpoint patterns (their own rules: at least one, line kept for errors).
            case list
            /// A list of strings; `check` returns the problem with an entry, or nil. The file
            /// takes a YAML list (or one scalar), the variable a comma-separated list.
            case strings(WritableKeyPath<SpoutConfiguration, [String]>, check: (String) -> String?)
            /// `identity.apiKeys`: a list of mappings in the file, `SUBJECT:ROLE:VARIABLE`
            /// entries in the variable.
            case apiKeys
        }

        /// The dotted key in the file: `database.poolSize`.
        var path: String
        var kind: Kind

        /// `SPOUT_` and the key in upper snake case, without the `server.` section:
        /// `server.port` → `SPOUT_PORT`, `database.poolSize` → `SPOUT_DATABASE_POOL_SIZE`.
        var environmentVariable: String {
            var key = Substring(self.path)
            if key.hasPrefix("server.") { key = key.dropFirst("server.".count) }
            var name = "SPOUT_"
            for character in key {
                if character == "." {
                    name += "_"
                } else if character.isUppercase {
                    name += "_" + character.uppercased()
                } else {
                    name += character.uppercased()
                }
            }
            return name
        }
    }

    /// Every key, in file order. The file's sections (`server`, `server.limits`, `server.cors`,
    /// `database`, `database.seed`) are the prefixes of these paths.
    static var settings: [Setting] {
        [
            Setting(path: "server.host", kind: .string(\.server.host)),
            Setting(path: "server.port", kind: .integer(\.server.port, 0...65_535)),
            Setting(path: "server.limits.maxHeaderBytes", kind: .integer(\.server.limits.maxHeaderBytes, 1_024...Int(Int32.max))),
            Setting(path: "server.limits.maxBodyBytes", kind: .integer(\.server.limits.maxBodyBytes, 0...Int(Int32.max))),
            Setting(path: "server.limits.maxBufferedBodyBytes", kind: .integer(\.server.limits.maxBufferedBodyBytes, 0...Int(Int64.max))),
            Setting(path: "server.limits.idleTimeoutSeconds", kind: .integer(\.server.limits.idleTimeoutSeconds, 1...86_400)),
            Setting(path: "server.limits.maxConnections", kind: .integer(\.server.limits.maxConnections, 0...1_000_000)),
            Setting(
                path: "server.limits.maxConnectionsPerAddress", kind: .integer(\.server.limits.maxConnectionsPerAddress, 0...1_000_000)),
            Setting(path: "server.limits.headTimeoutSeconds", kind: .integer(\.server.limits.headTimeoutSeconds, 1...3_600)),
            Setting(path: "server.limits.bodyTimeoutSeconds", kind: .integer(\.server.limits.bodyTimeoutSeconds, 1...3_600)),
            Setting(path: "server.limits.trustedProxies", kind: .strings(\.server.limits.trustedProxies, check: Self.addressProblem)),
            Setting(path: "server.limits.drainTimeoutSeconds", kind: .integer(\.server.limits.drainTimeoutSeconds, 0...3_600)),
            Setting(path: "server.limits.socketSendBufferBytes", kind: .integer(\.server.limits.socketSendBufferBytes, 0...Int(Int32.max))),
            Setting(path: "server.limits.maxStreamsPerAddress", kind: .integer(\.server.limits.maxStreamsPerAddress, 0...1_000_000)),
            Setting(path: "server.limits.maxSubscribers", kind: .integer(\.server.limits.maxSubscribers, 0...10_000_000)),
            Setting(
                path: "server.limits.maxSubscribersPerAddress", kind: .integer(\.server.limits.maxSubscribersPerAddress, 0...10_000_000)),
            Setting(path: "server.spool.enabled", kind: .boolean(\.server.spool.enabled)),
            Setting(path: "server.spool.directory", kind: .optionalString(\.server.spool.directory)),
            Setting(path: "server.spool.memoryBytesPerStream", kind: .integer(\.server.spool.memoryBytesPerStream, 0...(1 << 30))),
            Setting(path: "server.spool.maxBytesPerStream", kind: .integer(\.server.spool.maxBytesPerStream, 0...(1 << 50))),
            Setting(path: "server.spool.maxBytes", kind: .integer(\.server.spool.maxBytes, 0...(1 << 50))),
            Setting(path: "server.cors.allowedOrigins", kind: .strings(\.server.cors.allowedOrigins, check: Self.originProblem)),
            Setting(path: "server.cors.allowedHeaders", kind: .strings(\.server.cors.allowedHeaders, check: Self.headerNameProblem)),
            Setting(path: "server.cors.maxAgeSeconds", kind: .integer(\.server.cors.maxAgeSeconds, 0...86_400)),
            Setting(path: "server.timingHeader", kind: .boolean(\.server.timingHeader)),
            Setting(path: "server.heartbeatSeconds", kind: .integer(\.server.heartbeatSeconds, 1...3_600)),
            Setting(path: "server.metrics.enabled", kind: .boolean(\.server.metrics.enabled)),
            Setting(path: "server.metrics.port", kind: .integer(\.server.metrics.port, 0...65_535)),
            Setting(path: "server.metrics.host", kind: .string(\.server.metrics.host)),
            Setting(path: "database.url", kind: .string(\.database.url)),
            Setting(path: "database.replicaUrls", kind: .strings(\.database.replicaUrls, check: Self.replicaURLProblem)),
            Setting(path: "database.replicaMaxLagMs", kind: .integer(\.database.replicaMaxLagMs, 0...86_400_000)),
            Setting(path: "database.poolSize", kind: .integer(\.database.poolSize, 1...1_000)),
            Setting(path: "database.acquireTimeoutMs", kind: .integer(\.database.acquireTimeoutMs, 0...3_600_000)),
            Setting(path: "database.statementTimeoutMs", kind: .integer(\.database.statementTimeoutMs, 0...86_400_000)),
            Setting(path: "database.answerGraceMs", kind: .integer(\.database.answerGraceMs, 0...3_600_000)),
            Setting(path: "database.fetchSize", kind: .integer(\.database.fetchSize, 1...1_000_000)),
            Setting(path: "database.preparedStatements", kind: .boolean(\.database.preparedStatements)),
            Setting(path: "database.traceContext", kind: .boolean(\.database.traceContext)),
            Setting(path: "database.streamReserve", kind: .integer(\.database.streamReserve, 0...1_000)),
            Setting(path: "database.streamAcquireTimeoutMs", kind: .integer(\.database.streamAcquireTimeoutMs, 0...3_600_000)),
            Setting(path: "database.sharedReaders", kind: .integer(\.database.sharedReaders, 0...64)),
            Setting(path: "database.applicationName", kind: .optionalString(\.database.applicationName)),
            Setting(path: "database.changePollMs", kind: .integer(\.database.changePollMs, 10...60_000)),
            Setting(path: "database.changeRetentionHours", kind: .integer(\.database.changeRetentionHours, 1...87_600)),
            Setting(path: "database.idempotencyRetentionHours", kind: .integer(\.database.idempotencyRetentionHours, 1...87_600)),
            Setting(path: "database.seed.enabled", kind: .boolean(\.database.seed.enabled)),
            Setting(path: "database.seed.employees", kind: .integer(\.database.seed.employees, 0...100_000_000)),
            Setting(path: "identity.secretFromEnvironment", kind: .string(\.identity.secretFromEnvironment)),
            Setting(path: "identity.jwksFile", kind: .optionalString(\.identity.jwksFile)),
            Setting(path: "identity.jwksUrl", kind: .optionalString(\.identity.jwksUrl)),
            Setting(path: "identity.jwksRefreshSeconds", kind: .integer(\.identity.jwksRefreshSeconds, 1...86_400)),
            Setting(path: "identity.jwksCooldownSeconds", kind: .integer(\.identity.jwksCooldownSeconds, 0...3_600)),
            Setting(path: "identity.apiKeys", kind: .apiKeys),
            Setting(path: "identity.algorithms", kind: .strings(\.identity.algorithms, check: Self.algorithmProblem)),
            Setting(path: "identity.leewaySeconds", kind: .integer(\.identity.leewaySeconds, 0...3_600)),
            Setting(path: "identity.maxLifetimeSeconds", kind: .integer(\.identity.maxLifetimeSeconds, 0...31_536_000)),
            Setting(path: "identity.issuer", kind: .optionalString(\.identity.issuer)),
            Setting(path: "identity.audience", kind: .optionalString(\.identity.audience)),
            Setting(path: "identity.roleClaim", kind: .string(\.identity.roleClaim)),
            Setting(path: "identity.roles", kind: .strings(\.identity.roles, check: Self.roleProblem)),
            Setting(path: "identity.defaultRole", kind: .optionalString(\.identity.defaultRole)),
            Setting(path: "identity.anonymousRole", kind: .optionalString(\.identity.anonymousRole)),
            Setting(path: "tracing.enabled", kind: .boolean(\.tracing.enabled)),
            Setting(path: "tracing.endpoint", kind: .optionalString(\.tracing.endpoint)),
            Setting(path: "tracing.protocol", kind: .string(\.tracing.protocol)),
            Setting(path: "tracing.serviceName", kind: .string(\.tracing.serviceName)),
            Setting(path: "tracing.samplePercent", kind: .integer(\.tracing.samplePercent, 0...100)),
            Setting(path: "dateFormat", kind: .dateFormat),
            Setting(path: "endpoints", kind: .list),
            Setting(path: "sqlDirectory", kind: .string(\.sqlDirectory)),
            Setting(path: "maxDetailDepth", kind: .integer(\.maxDetailDepth, 1...16)),
            Setting(path: "cursorSecret", kind: .optionalString(\.cursorSecret)),
        ]
    }

    /// Nil when `text` is an algorithm ``TokenVerifier`` verifies.
    static func algorithmProblem(_ text: String) -> String? {
        if TokenVerifier.supportedAlgorithms.contains(text) { return nil }
        return "'\(text)' is not a supported algorithm (\(TokenVerifier.supportedAlgorithms.joined(separator: ", ")))"
    }

    /// Nil when `text` can be a PostgreSQL role name Spout switches to: letters, digits and
    /// underscores, not starting with a digit.
    static func roleProblem(_ text: String) -> String? {
        if EndpointAuth.isVariableName(text) && text.utf8.count <= 63 { return nil }
        return "'\(text)' is not a role name Spout switches to (letters, digits and underscores, at most 63)"
    }

    /// Nil when `key` is an `identity.apiKeys` entry Spout can use: a subject, a role name
    /// Spout switches to (or none), a variable name.
    static func apiKeyProblem(_ key: Identity.APIKey) -> String? {
        if key.subject.isEmpty { return "an API key needs a subject" }
        if !key.role.isEmpty, let problem = self.roleProblem(key.role) { return problem }
        if !EndpointAuth.isVariableName(key.keyFromEnvironment) {
            return "'keyFromEnvironment' must name an environment variable (letters, digits and underscores), not '\(key.keyFromEnvironment)'"
        }
        return nil
    }

    /// Nil when `text` is `*` or an origin as browsers send it (`scheme://host[:port]`, no path).
    static func originProblem(_ text: String) -> String? {
        if text == "*" { return nil }
        let problem =
            "'\(text)' is not an origin; write scheme://host or scheme://host:port without a path "
            + "(https://app.example.com), or *"
        guard let separator = text.range(of: "://") else { return problem }
        let scheme = text[..<separator.lowerBound]
        let authority = text[separator.upperBound...]
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }),
            !authority.isEmpty, !authority.contains(where: { "/?#*@ \t".contains($0) })
        else { return problem }
        return nil
    }

    /// Nil when `text` is a PostgreSQL URL (replicas are PostgreSQL's streaming replicas). The
    /// message never repeats the URL, which may hold a password.
    static func replicaURLProblem(_ text: String) -> String? {
        guard text.hasPrefix("postgresql://") || text.hasPrefix("postgres://") else {
            return "a replica URL starts with postgresql:// or postgres://"
        }
        return nil
    }

    /// Nil when `text` is an IPv4 or IPv6 address as a socket reports a peer (no port, no name).
    static func addressProblem(_ text: String) -> String? {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1 { return nil }
        return "'\(text)' is not an IP address (write 10.0.0.5 or ::1, without a port or host name)"
    }

    /// Nil when `text` is a header field name (an HTTP token).
    static func headerNameProblem(_ text: String) -> String? {
        let valid = text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "!#$%&'*+-.^_`|~".contains($0)) }
        return valid ? nil : "'\(text)' is not a header name"
    }

    /// The environment variables read by ``applyEnvironment(_:)``, with the key each sets.
    public static var environmentVariables: [(variable: String, key: String)] {
        self.settings.map { ($0.environmentVariable, $0.path) }
    }
}
