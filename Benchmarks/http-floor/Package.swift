// swift-tools-version:6.0
// The HTTP floor of swift-nio alone: a server that answers every request with Spout's
// `GET /health` response, on NIO's HTTP/1 pipeline and nothing else. Benchmark only
// (docs/benchmarks.md, "The HTTP floor"); not part of Spout, and not built by its tests.
import PackageDescription

let package = Package(
    name: "http-floor",
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2")
    ],
    targets: [
        .executableTarget(
            name: "nio-floor",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        )
    ]
)
