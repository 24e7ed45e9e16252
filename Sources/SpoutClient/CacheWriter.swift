import Foundation
import Synchronization

/// Copies a body into the cache while the caller reads it, without making the caller wait.
///
/// ``append(_:)`` only counts the bytes and enqueues their write on the cache's queue.
/// ``commit()`` (the body ended) enqueues the move into place; ``abandon()`` (an error, or
/// the consumer stopped early) enqueues the removal. A body bigger than the cache's bound,
/// or writes falling more than ``maximumPendingBytes`` behind the network, abandon the copy
/// instead of holding memory or slowing the caller: that response is simply not cached.
final class CacheWriter: Sendable {
    /// How far the disk may fall behind before the copy is given up.
    static let maximumPendingBytes = 8 * 1024 * 1024

    private struct CallerSide {
        var pending = 0
        var total = 0
        var finished = false
    }

    private struct QueueSide {
        var file: (url: URL, handle: FileHandle)?
        var failed = false
    }

    private let cache: ResponseCache
    private let key: String
    private let etag: String?
    private let contentType: String?
    private let links: [String]
    private let maximumBytes: Int
    private let callerSide = Mutex(CallerSide())
    private let queueSide = Mutex(QueueSide())

    init(cache: ResponseCache, key: String, etag: String?, contentType: String?, links: [String], maximumBytes: Int) {
        self.cache = cache
        self.maximumBytes = maximumBytes
        self.links = links
        self.key = key
        self.etag = etag
        self.contentType = contentType
    }

    /// Enqueues the write of `bytes`; gives the copy up when it grew too big or too far behind.
    func append(_ bytes: [UInt8]) {
        enum Outcome { case write, giveUp, ignore }
        let outcome = self.callerSide.withLock { side -> Outcome in
            guard !side.finished else { return .ignore }
            side.pending += bytes.count
            side.total += bytes.count
            guard side.pending <= Self.maximumPendingBytes, side.total <= self.maximumBytes else {
                side.finished = true
                return .giveUp
            }
            return .write
        }
        switch outcome {
        case .ignore: return
        case .giveUp: return self.enqueueRemoval()
        case .write: break
        }
        self.cache.enqueue {
            self.queueSide.withLock { side in
                if side.file == nil && !side.failed {
                    side.file = self.cache.makeTemporaryFile()
                    side.failed = side.file == nil
                }
                if let file = side.file {
                    do { try file.handle.write(contentsOf: bytes) } catch { side.failed = true }
                }
            }
            self.callerSide.withLock { $0.pending -= bytes.count }
        }
    }

    /// The body ended as the protocol says it ends: store it.
    func commit() {
        let total = self.callerSide.withLock { side -> Int? in
            guard !side.finished else { return nil }
            side.finished = true
            return side.total
        }
        guard let total else { return }
        self.cache.enqueue {
            let file = self.queueSide.withLock { side -> (URL, FileHandle)? in
                defer { side.file = nil }
                if side.file == nil && !side.failed && total == 0 {
                    side.file = self.cache.makeTemporaryFile()
                }
                guard let file = side.file, !side.failed else {
                    if let file = side.file { Self.discard(file) }
                    return nil
                }
                return file
            }
            guard let (url, handle) = file else { return }
            try? handle.close()
            self.cache.commit(temporary: url, key: self.key, etag: self.etag, contentType: self.contentType, links: self.links, size: total,
                maximumBytes: self.maximumBytes)
        }
    }

    /// The body will not be complete: drop the copy.
    func abandon() {
        let first = self.callerSide.withLock { side -> Bool in
            defer { side.finished = true }
            return !side.finished
        }
        if first { self.enqueueRemoval() }
    }

    private func enqueueRemoval() {
        self.cache.enqueue {
            self.queueSide.withLock { side in
                if let file = side.file { Self.discard(file) }
                side.file = nil
                side.failed = true
            }
        }
    }

    private static func discard(_ file: (url: URL, handle: FileHandle)) {
        try? file.handle.close()
        try? FileManager.default.removeItem(at: file.url)
    }
}
