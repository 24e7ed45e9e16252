import Foundation
import Synchronization

/// A cached body read back from its open file, 64 KiB at a time.
///
/// File reads happen on the reading task: they are local and short, unlike the cache's
/// writes, which never make a caller wait (``CacheWriter``).
final class CachedBodyReader: ResponseBodyReader {
    static let chunkSize = 64 * 1024
    private let handle: Mutex<FileHandle?>

    init(handle: FileHandle) {
        self.handle = Mutex(handle)
    }

    deinit {
        self.close()
    }

    func nextChunk() async throws -> [UInt8]? {
        try self.handle.withLock { handle -> [UInt8]? in
            guard let file = handle else { return nil }
            let data = try file.read(upToCount: Self.chunkSize) ?? Data()
            if data.isEmpty {
                try? file.close()
                handle = nil
                return nil
            }
            return [UInt8](data)
        }
    }

    func close() {
        self.handle.withLock { handle in
            try? handle?.close()
            handle = nil
        }
    }
}
