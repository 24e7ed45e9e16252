// swift-tools-version:6.1
import PackageDescription

// Spout: SQL queries streamed as JSON over HTTP.
//
// One module per layer (see docs/ARCHITECTURE.md):
//   CLibPQ, CSQLite3   system libraries (libpq-dev, libsqlite3-dev)
//   CISAL, CZstd       system libraries (libisal-dev, libzstd-dev): gzip/deflate and zstd bodies
//   CEventPoll         Linux epoll (glibc), for the PostgreSQL reactor thread
//   CMalloc            glibc's mallopt, for the executable's allocator settings
//   SpoutCore          values, named-parameter SQL, row streams with attach(), encoders, pool
//   SpoutPostgres      the libpq driver
//   SpoutSQLite        the libsqlite3 driver
//   SpoutDrivers       opens a Database for a URL (picks the driver)
//   SpoutHTTP          HTTP/1.1 on SwiftNIO: routing, arguments, streamed responses, metrics
//   SpoutEndpoints     endpoints declared in config/ with SQL in sql/, API docs, identity
//                      (it fetches a JWKS URL through SpoutClient's transport)
//   SpoutData          the test_db dump loader and the data generator
//   spout              the executable: serve, load, generate
//   SpoutClient        the Swift client library: rows decoded as they stream, paging, an
//                      on-disk cache, sync stores in SQLite files (CSQLite3), TLS, pooled
//                      keep-alive connections, gzip (AsyncHTTPClient on Linux, URLSession on
//                      Apple platforms; no dependency on the server's modules)
//   spout-client-example  prints employees as they stream, through SpoutClient
let package = Package(
    name: "Spout",
    // The server runs on Linux and macOS; SpoutClient also builds for Apple's other platforms
    // (its locks are the Synchronization module's Mutex, hence these versions).
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .visionOS(.v2)],
    products: [
        .executable(name: "spout", targets: ["spout"]),
        .library(name: "SpoutCore", targets: ["SpoutCore"]),
        .library(name: "SpoutClient", targets: ["SpoutClient"]),
        .executable(name: "spout-client-example", targets: ["spout-client-example"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // Metrics for GET /metrics: swift-prometheus's registry (small: it adds swift-metrics and
        // swift-atomics). Used directly, not through the swift-metrics API, which has no HELP text.
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // SHA-256 and HMAC for ETags and tamper-evident page cursors: cryptography is not
        // written by hand. Costs about a minute of CI build time (its BoringSSL copy). Major
        // version 4 too: jwt-kit needs it, and the APIs Spout uses are the same in both.
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        // Verified bearer tokens (JWT: HMAC, RSA, ECDSA, EdDSA, JWKS) for identity, issue #30:
        // no hand-written cryptography. Builds on swift-crypto (with CryptoExtras) and adds
        // swift-certificates and swift-asn1: about 1.5 minutes more for a clean debug build on
        // 2 cores (JWTKit, X509, SwiftASN1 and CryptoExtras measured at 92 s, machine shared).
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        // Signals, graceful drain and the order things stop in (`spout serve`: the servers
        // drain, then the database closes). Small: it adds swift-async-algorithms (swift-nio
        // already brings swift-collections).
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // TLS for SpoutClient's Linux transport (issue #33; the server stays behind a
        // TLS-terminating proxy): the certificate pins are checked with it. AsyncHTTPClient
        // builds it anyway; NIOSSL and its BoringSSL copy (CNIOBoringSSL) from clean measured
        // 6 min wall, 4 min 40 s of CPU on the shared 2-core machine (load average about 8).
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // SpoutClient's transport on Linux (#58, #65): HTTP/1.1 with keep-alive, TLS and
        // streamed bodies, instead of a client of its own. Already resolved (swift-otel uses it).
        // The trait: a streamed body's trailer fields (`Spout-Truncated`) are behind it.
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0", traits: ["UnstableHTTPAPIsSupport"]),
        // HTTPFields, HTTPRequest.Method and HTTPResponse.Status in the server's and SpoutClient's
        // APIs instead of their own header, method and status types (#28); already resolved
        // through swift-nio-extras, a few small files.
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // W3C Trace Context (`traceparent`, `tracestate`): parsing and writing trace and span ids
        // (#34). Small: a few files on swift-collections, which swift-nio already brings.
        .package(url: "https://github.com/swift-otel/swift-w3c-trace-context.git", from: "1.0.0"),
        // Spans (#34): the server's HTTP and database layers start them through the Tracing API
        // (small: it adds swift-service-context), never through a global tracer.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // The OTLP exporter behind that API, in `spout serve` only, over HTTP only (the trait:
        // no gRPC). It brings swift-protobuf and async-http-client. CI on a fresh clone, before
        // and after (2026-11-26): clean debug build 501 -> 579 s, static release build 583 ->
        // 611 s, the whole run 2,059 -> 2,173 s.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // Linux's epoll and eventfd (glibc headers), for the PostgreSQL driver's reactor.
        .systemLibrary(name: "CEventPoll"),
        // glibc's mallopt (malloc.h), for the spout executable's allocator settings.
        .systemLibrary(name: "CMalloc"),
        .systemLibrary(
            name: "CSQLite3",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // Compressed bodies (gzip and deflate by ISA-L, zstd; issue #31).
        .systemLibrary(name: "CISAL", pkgConfig: "libisal", providers: [.apt(["libisal-dev"])]),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        .target(name: "SpoutCore"),
        // The reactor's epoll is Linux's; elsewhere the driver runs every statement on the
        // thread pool (see docs/ARCHITECTURE.md).
        .target(
            name: "SpoutPostgres",
            dependencies: ["SpoutCore", "CLibPQ", .target(name: "CEventPoll", condition: .when(platforms: [.linux]))]
        ),
        .target(name: "SpoutSQLite", dependencies: ["SpoutCore", "CSQLite3"]),
        .target(name: "SpoutDrivers", dependencies: ["SpoutCore", "SpoutPostgres", "SpoutSQLite"]),
        .target(
            name: "SpoutHTTP",
            dependencies: [
                "SpoutCore",
                "CISAL",
                "CZstd",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // ServerQuiescingHelper: the graceful drain on shutdown.
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                // HTTPFields, HTTPRequest.Method, HTTPResponse.Status: the vocabulary of requests
                // and responses (#28); NIOHTTP1 still frames them on the wire.
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "W3CTraceContext", package: "swift-w3c-trace-context"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "SpoutEndpoints",
            dependencies: [
                "SpoutCore",
                "SpoutHTTP",
                // The keys of a JWKS URL are fetched with the client's transport (AsyncHTTPClient
                // on Linux, URLSession on macOS): one HTTP client in the tree.
                "SpoutClient",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(name: "SpoutData", dependencies: ["SpoutCore"]),
        .executableTarget(
            name: "spout",
            dependencies: [
                "SpoutCore",
                "SpoutDrivers",
                "SpoutHTTP",
                "SpoutEndpoints",
                "SpoutData",
                .target(name: "CMalloc", condition: .when(platforms: [.linux])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
            ]
        ),
        // The client library: AsyncHTTPClient (with swift-nio-ssl for TLS) is its transport on
        // Linux, URLSession on Apple platforms, where it builds no package but swift-http-types
        // (docs/client.md says why). No swift-crypto: SHA-256 is CryptoKit's on Apple platforms
        // and its own on Linux (SHA256Hash.swift), so a client-only app compiles one BoringSSL.
        .target(
            name: "SpoutClient",
            dependencies: [
                // The sync store's and write queue's files (the SDK's libsqlite3 on Apple platforms).
                "CSQLite3",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(platforms: [.linux])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras", condition: .when(platforms: [.linux])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(platforms: [.linux])),
            ]
        ),
        .executableTarget(name: "spout-client-example", dependencies: ["SpoutClient"]),
        // The test kit: HTTP on the wire, waiting, child processes and served checkouts,
        // fixtures' paths. No database in it, so the HTTP layer's tests link no driver.
        .target(
            name: "SpoutTestSupport",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            path: "Tests/SpoutTestSupport"
        ),
        // Which databases a test runs on, and a fresh one per test (both drivers).
        .target(name: "SpoutTestDatabases", dependencies: ["SpoutCore", "SpoutDrivers"], path: "Tests/SpoutTestDatabases"),
        // The in-process server fixture: a router, an endpoint set or a whole configuration served
        // on a free port.
        .target(
            name: "SpoutTestServer",
            dependencies: [
                "SpoutCore", "SpoutDrivers", "SpoutHTTP", "SpoutEndpoints", "SpoutTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/SpoutTestServer"
        ),
        .testTarget(name: "SpoutCoreTests", dependencies: ["SpoutCore", "SpoutTestSupport"]),
        .testTarget(
            name: "SpoutDriverTests",
            dependencies: ["SpoutCore", "SpoutDrivers", "SpoutPostgres", "SpoutSQLite", "SpoutTestSupport", "SpoutTestDatabases"]
        ),
        // The HTTP layer alone: no database driver is linked (end-to-end server tests over a
        // database are in SpoutEndpointsTests/Server).
        .testTarget(
            name: "SpoutHTTPTests",
            dependencies: [
                // CZstd: a compressed stream decoded before it ends (CompressionStageTests).
                "SpoutCore", "SpoutHTTP", "SpoutTestSupport", "CZstd",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // The in-memory tracer: request spans checked without an exporter.
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "SpoutEndpointsTests",
            dependencies: [
                "SpoutCore", "SpoutDrivers", "SpoutPostgres", "SpoutSQLite", "SpoutHTTP", "SpoutEndpoints", "SpoutData",
                "SpoutTestSupport", "SpoutTestDatabases", "SpoutTestServer",
                .product(name: "Logging", package: "swift-log"), .product(name: "Yams", package: "Yams"),
                // Server/: the HTTP server end to end over a database, and its channel handlers.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // Tokens signed by a real library, with keys it generates (identity tests).
                .product(name: "JWTKit", package: "jwt-kit"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                // The live notices' metrics, read from their registry.
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .testTarget(
            name: "SpoutReliabilityTests",
            dependencies: [
                "SpoutCore", "SpoutDrivers", "SpoutHTTP", "SpoutEndpoints", "SpoutData", "SpoutTestSupport", "SpoutTestDatabases",
                "SpoutTestServer", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SpoutClientTests",
            dependencies: [
                // SpoutCore: SQLDialect, the one way tests say which database serves them.
                // SpoutDrivers: the served database's change log pruned (a sync cursor's 410).
                "SpoutClient", "SpoutTestSupport", "SpoutTestDatabases", "SpoutCore", "SpoutDrivers",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SpoutDataTests",
            dependencies: ["SpoutCore", "SpoutDrivers", "SpoutPostgres", "SpoutSQLite", "SpoutData", "SpoutTestSupport", "SpoutTestDatabases"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
