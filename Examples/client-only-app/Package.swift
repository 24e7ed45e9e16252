// swift-tools-version:6.1
import PackageDescription

// An app that only calls a Spout service: it depends on the SpoutClient product and nothing
// else, so it shows what a client-only app compiles (docs/client.md, "What an app builds").
//
//   swift build --scratch-path /tmp/client-only-build
//   /tmp/client-only-build/debug/client-only-app http://127.0.0.1:8080
let package = Package(
    name: "client-only-app",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        .package(name: "Spout", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "client-only-app",
            dependencies: [.product(name: "SpoutClient", package: "Spout")]
        )
    ]
)
