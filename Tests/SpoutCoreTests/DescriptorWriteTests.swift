import Foundation
import SpoutCore
import Testing

@Suite struct DescriptorWriteTests {
    @Test("a file gets every byte, at its position or at an offset that leaves the position alone")
    func writesWholeBuffersToFiles() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spout-write-\(UUID().uuidString)").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        try #require(descriptor >= 0)
        defer {
            close(descriptor)
            unlink(path)
        }
        let large = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(DescriptorWrite.all(large, to: descriptor) == nil)
        #expect(DescriptorWrite.all(Array("middle".utf8), to: descriptor, at: 10) == nil)
        #expect(DescriptorWrite.all(Array("end".utf8), to: descriptor) == nil)
        var expected = large
        expected.replaceSubrange(10..<16, with: Array("middle".utf8))
        expected += Array("end".utf8)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(expected))
    }

    @Test("a write that fails part way reports its errno, with the bytes before it written")
    func reportsTheFailureAfterAPartialWrite() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        // Nobody reads: the pipe takes its capacity, then the next write would block.
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        let size = 4 << 20  // past any pipe's capacity (Linux: 64 KiB, at most 1 MiB unprivileged)
        #expect(DescriptorWrite.all([UInt8](repeating: 7, count: size), to: ends[1]) == EAGAIN)
        var buffer = [UInt8](repeating: 0, count: size)
        var total = 0
        while true {
            let count = read(ends[0], &buffer, buffer.count)
            if count <= 0 { break }
            total += count
        }
        #expect(total > 0 && total < size)
        #expect(buffer[0] == 7)
        #expect(DescriptorWrite.all([1, 2, 3], to: -1) == EBADF)
        #expect(DescriptorWrite.all([], to: -1) == nil)
    }
}
