import Foundation

/// A real decompressor could not decompress the data.
public struct GunzipFailure: Error, CustomStringConvertible {
    public var tool: String = "gzip"
    public var description: String { "\(self.tool) -dc failed" }
}

/// Decompresses gzip data with `/usr/bin/gzip -dc` (a real gzip, not the code under test).
public func gunzip(_ data: [UInt8]) throws -> [UInt8] {
    try decompress(data, tool: "/usr/bin/gzip")
}

/// Decompresses zstd data with `/usr/bin/zstd -dc` (Debian's `zstd`, which `scripts/test`
/// installs).
public func unzstd(_ data: [UInt8]) throws -> [UInt8] {
    try decompress(data, tool: "/usr/bin/zstd")
}

/// Decompresses HTTP `deflate` data (zlib's format, RFC 1950) with Python's `zlib` module, a
/// build of the reference library that is not the code under test (`scripts/test` installs
/// `python3`).
public func inflate(_ data: [UInt8]) throws -> [UInt8] {
    try decompress(data, tool: "/usr/bin/python3") { path in
        ["-c", "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(open(sys.argv[1], 'rb').read()))", path]
    }
}

/// Decodes what a gzip (`gzip` true) or zlib-format stream that has not ended holds so far,
/// with Python's `zlib` (`decompressobj`, which gives up what it can without the trailer).
public func inflatePrefix(_ data: [UInt8], gzip: Bool) throws -> [UInt8] {
    try decompress(data, tool: "/usr/bin/python3") { path in
        let program = "import sys, zlib; d = zlib.decompressobj(\(gzip ? 31 : 15)); sys.stdout.buffer.write(d.decompress(open(sys.argv[1], 'rb').read()))"
        return ["-c", program, path]
    }
}

private func decompress(_ data: [UInt8], tool: String, arguments: (String) -> [String] = { ["-dc", $0] }) throws -> [UInt8] {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("spout-compressed-\(UUID().uuidString)")
    try Data(data).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let result = try ChildProcess.run(executable: tool, arguments: arguments(file.path)) as ChildProcess.Result
    guard result.status == 0 else { throw GunzipFailure(tool: tool) }
    return result.outputBytes
}
