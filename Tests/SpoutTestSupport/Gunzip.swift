import Foundation

/// gzip could not decompress the data.
public struct GunzipFailure: Error, CustomStringConvertible {
    public var description: String { "gzip -dc failed" }
}

/// Decompresses gzip data with `/usr/bin/gzip -dc` (a real gzip, not the code under test).
public func gunzip(_ data: [UInt8]) throws -> [UInt8] {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("spout-gz-\(UUID().uuidString).gz")
    try Data(data).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/gzip")
    process.arguments = ["-dc", file.path]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let bytes = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw GunzipFailure() }
    return Array(bytes)
}
