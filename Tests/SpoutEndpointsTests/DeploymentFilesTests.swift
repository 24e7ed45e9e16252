import Foundation
import SpoutEndpoints
import SpoutTestSupport
import Testing
import Yams

/// The container files cannot be built here (no Docker engine), so their settings are checked
/// by reading them.
@Suite struct DeploymentFilesTests {
    static var root: URL { TestFixtures.repositoryRoot }

    static func read(_ path: String) throws -> String {
        try String(contentsOf: self.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Dockerfile instructions with continuation lines joined: (instruction, arguments).
    /// The arguments of a stage's `ENV` instructions, joined.
    static func environment(_ steps: [(String, String)]) -> String {
        steps.filter { $0.0 == "ENV" }.map(\.1).joined(separator: " ")
    }

    static func instructions() throws -> [(String, String)] {
        var joined: [String] = []
        var current = ""
        for line in try self.read("Dockerfile").split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if current.isEmpty && (trimmed.isEmpty || trimmed.hasPrefix("#")) { continue }
            if trimmed.hasSuffix("\\") {
                current += trimmed.dropLast() + " "
            } else {
                joined.append(current + trimmed)
                current = ""
            }
        }
        return joined.map { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            return (parts[0].uppercased(), parts.count > 1 ? String(parts[1]) : "")
        }
    }

    @Test func dockerfileBuildsStaticallyInAMultiStageBuild() throws {
        let steps = try Self.instructions()
        let froms = steps.filter { $0.0 == "FROM" }.map(\.1)
        #expect(froms.count == 2)
        #expect(froms.first == "${SWIFT_IMAGE} AS builder")
        #expect(froms.last == "${RUNTIME_IMAGE}")
        let arguments = steps.filter { $0.0 == "ARG" }.map(\.1)
        #expect(arguments.contains { $0.hasPrefix("SWIFT_IMAGE=swift:6") })
        #expect(arguments.contains("RUNTIME_IMAGE=debian:bookworm-slim"))

        let builder = steps.prefix { !($0.0 == "FROM" && $0.1 == "${RUNTIME_IMAGE}") }
        let runs = builder.filter { $0.0 == "RUN" }.map(\.1)
        #expect(runs.contains { $0.contains("libpq-dev") && $0.contains("libsqlite3-dev") })
        #expect(runs.contains { $0.contains("swift build -c release --static-swift-stdlib") })
        // Dependencies resolve before the sources are copied, so source edits reuse that layer.
        let resolve = try #require(builder.firstIndex { $0.0 == "RUN" && $0.1.contains("swift package resolve") })
        let sources = try #require(builder.firstIndex { $0.0 == "COPY" && $0.1.hasPrefix("Sources") })
        let manifest = try #require(builder.firstIndex { $0.0 == "COPY" && $0.1.hasPrefix("Package.swift") })
        #expect(manifest < resolve && resolve < sources)
    }

    @Test func runtimeImageIsSmallAndUnprivileged() throws {
        let steps = try Self.instructions()
        let runtimeStart = try #require(steps.lastIndex { $0.0 == "FROM" })
        let runtime = Array(steps[runtimeStart...])
        let install = try #require(runtime.first { $0.0 == "RUN" && $0.1.contains("apt-get install") }).1
        // The README's list of the runtime stage's packages names each one.
        let readme = try String(contentsOf: Repository.root.appendingPathComponent("README.md"), encoding: .utf8)
        let listed = try #require(readme.range(of: "`debian:bookworm-slim` with only ")).upperBound
        let list = readme[listed...].prefix { $0 != "\n" }
        for package in ["libpq5", "libsqlite3-0", "libzstd1", "libisal2", "ca-certificates", "tzdata"] {
            #expect(install.contains(package), "runtime installs \(package)")
            #expect(list.contains("`\(package)`"), "README.md names the runtime package \(package)")
        }
        #expect(!install.contains("-dev"), "no development packages at run time")
        let user = try #require(runtime.last { $0.0 == "USER" }).1
        #expect(user != "root" && user != "0")
        #expect(runtime.contains { $0.0 == "EXPOSE" && $0.1 == "8080" })
        // SQLite's folder belongs to the image's user and is not a VOLUME: containers on
        // PostgreSQL would get an unused anonymous volume each.
        #expect(!runtime.contains { $0.0 == "VOLUME" })
        #expect(runtime.contains { $0.0 == "RUN" && $0.1.contains("mkdir -p /app/data") && $0.1.contains("chown spout:spout /app/data") })
        #expect(Self.environment(runtime).contains("SPOUT_DATABASE_URL=sqlite:/app/data/"))
        #expect(runtime.contains { $0.0 == "HEALTHCHECK" && $0.1.contains("/health") })
        let environment = Self.environment(runtime)
        #expect(environment.contains("SPOUT_HOST=0.0.0.0"))
        #expect(environment.contains("SPOUT_PORT=8080"))
        #expect(runtime.contains { $0.0 == "COPY" && $0.1.hasPrefix("config") })
        #expect(runtime.contains { $0.0 == "COPY" && $0.1.hasPrefix("sql") })
    }

    @Test func dockerignoreKeepsBuildOutputOut() throws {
        let lines = try Self.read(".dockerignore").split(separator: "\n").map(String.init)
        #expect(lines.contains(".build/"))
        #expect(lines.contains(".git/"))
    }

    @Test func composeStartsPostgresLoadsOnceAndServes() throws {
        let compose = try #require(try Yams.load(yaml: try Self.read("docs/deploy/compose.yaml")) as? [String: Any])
        let services = try #require(compose["services"] as? [String: Any])
        #expect(Set(services.keys) == ["postgres", "load", "spout"])
        let postgres = try #require(services["postgres"] as? [String: Any])
        #expect((postgres["image"] as? String)?.hasPrefix("postgres:") == true)
        #expect(postgres["healthcheck"] != nil)
        let load = try #require(services["load"] as? [String: Any])
        #expect((load["restart"] as? String) == "no")
        let loadCommand = (load["command"] as? [String])?.joined(separator: "\n") ?? ""
        #expect(loadCommand.contains("spout load "))
        let spout = try #require(services["spout"] as? [String: Any])
        let dependsOn = try #require(spout["depends_on"] as? [String: [String: String]])
        #expect(dependsOn["load"]?["condition"] == "service_completed_successfully")
        let environment = try #require(spout["environment"] as? [String: String])
        #expect(environment["SPOUT_DATABASE_URL"]?.hasPrefix("postgresql://") == true)
        #expect((spout["ports"] as? [String])?.contains("8080:8080") == true)
    }

    /// The container version of the topology that `scripts/scale-out` starts and
    /// ScaleOutTopologyTests runs (no container engine here: its shape is checked instead).
    @Test func scaleOutComposeMirrorsTheTestedTopology() throws {
        let compose = try #require(try Yams.load(yaml: try Self.read("docs/deploy/scale-out.compose.yaml")) as? [String: Any])
        let services = try #require(compose["services"] as? [String: Any])
        #expect(Set(services.keys) == ["primary", "replica", "pgbouncer", "load", "spout-1", "spout-2", "nginx"])
        // The settings, and the JWT secret's variable (identity.secretFromEnvironment).
        let jwtSecret = SpoutConfiguration.Identity().secretFromEnvironment
        let known = Set(SpoutConfiguration.environmentVariables.map(\.variable) + [jwtSecret])
        for name in ["spout-1", "spout-2"] {
            let spout = try #require(services[name] as? [String: Any])
            let environment = try #require(spout["environment"] as? [String: String])
            #expect(Set(environment.keys).isSubset(of: known), "\(name): \(Set(environment.keys).subtracting(known))")
            #expect(environment["SPOUT_DATABASE_PREPARED_STATEMENTS"] == "false")
            #expect(environment["SPOUT_DATABASE_REPLICA_URLS"]?.contains("pgbouncer:6432/employees_replica") == true)
            // Identity: one JWT secret for both, from the environment of `docker compose`, which
            // refuses to start without it (never a value written in the file).
            #expect(environment[jwtSecret]?.hasPrefix("${\(jwtSecret):?") == true, "\(name): \(environment[jwtSecret] ?? "no JWT secret")")
            // Page cursors: no secret to share; the key is in the database (spout_keys).
            #expect(environment["SPOUT_CURSOR_SECRET"] == nil)
        }
        // The file says what identity and cursors need.
        let text = try Self.read("docs/deploy/scale-out.compose.yaml")
        #expect(text.contains("spout_keys") && text.contains("SPOUT_IDENTITY_JWKS_URL") && text.contains("openssl rand -base64 32"))
        let pgbouncer = (((services["pgbouncer"] as? [String: Any])?["command"]) as? [String])?.joined() ?? ""
        #expect(pgbouncer.contains("pool_mode = transaction"))
        let replica = (((services["replica"] as? [String: Any])?["command"]) as? [String])?.joined() ?? ""
        #expect(replica.contains("pg_basebackup -h primary") && replica.contains(" -R "))
        let nginx = try Self.read("docs/deploy/scale-out.nginx.conf")
        #expect(nginx.contains("proxy_buffering off;") && nginx.contains("server spout-1:8080;") && nginx.contains("server spout-2:8080;"))
    }

    /// The Kubernetes example of docs/scaling.md (several pods behind one Service): every pod
    /// gets the JWT secret from a Secret, or the comment names the JWKS URL instead; no cursor
    /// secret is needed; every variable is one Spout reads.
    @Test func kubernetesExampleCarriesIdentity() throws {
        let text = try Self.read("docs/scaling.md")
        let section = try #require(text.components(separatedBy: "## Kubernetes example").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```yaml").dropFirst().first?.components(separatedBy: "```").first)
        let documents = try Yams.load_all(yaml: block).compactMap { $0 as? [String: Any] }
        let deployment = try #require(documents.first { $0["kind"] as? String == "Deployment" })
        let spec = try #require((((deployment["spec"] as? [String: Any])?["template"] as? [String: Any])?["spec"]) as? [String: Any])
        let container = try #require((spec["containers"] as? [[String: Any]])?.first)
        let environment = try #require(container["env"] as? [[String: Any]])
        let names = environment.compactMap { $0["name"] as? String }
        let jwtSecret = SpoutConfiguration.Identity().secretFromEnvironment
        let known = Set(SpoutConfiguration.environmentVariables.map(\.variable) + [jwtSecret])
        #expect(Set(names).isSubset(of: known), "\(Set(names).subtracting(known))")
        let secret = try #require(environment.first { $0["name"] as? String == jwtSecret })
        let reference = (secret["valueFrom"] as? [String: Any])?["secretKeyRef"] as? [String: Any]
        #expect(reference?["name"] != nil && reference?["key"] != nil, "\(secret)")
        #expect(!names.contains("SPOUT_CURSOR_SECRET"))
        #expect(block.contains("SPOUT_IDENTITY_JWKS_URL") && block.contains("spout_keys"))
        #expect(known.contains("SPOUT_IDENTITY_JWKS_URL"))
    }
}
