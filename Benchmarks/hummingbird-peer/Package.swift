// swift-tools-version:6.0
// A Hummingbird + PostgresNIO peer for the detail request (Benchmarks/java-peer/run
// --hummingbird builds it in release and measures it beside Spout and the Java peer).
// Benchmark only; not part of Spout's package or its tests.
import PackageDescription

let package = Package(
    name: "HummingbirdPeer",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        .executableTarget(
            name: "HummingbirdPeer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        )
    ]
)
