import Dispatch
import Foundation
import HTTPTypes
import Synchronization

/// The on-disk store behind ``SpoutCacheConfiguration``: one body file and one metadata file
/// per cached URL, an in-memory index of them, least-recently-used eviction.
///
/// Every file operation and every change of the index runs on one serial queue, never on the
/// caller's task: lookups are awaited, writes are not (``CacheWriter``). Because lookups go
/// through the same queue, a body whose write was committed before a lookup was asked for is
/// found by it.
///
/// Clients of one process that use the same folder share one instance (``shared(directory:)``),
/// so their lookups and writes are ordered by one queue.
///
/// Files, for the key's 64-bit FNV-1a hash `H`: `H.body` and `H.json` (``Entry``, with the
/// full key, checked on lookup, so a hash collision is a miss, not a wrong body).
final class ResponseCache: Sendable {
    /// What is known of one stored body.
    struct Entry: Codable, Sendable {
        var key: String
        var etag: String?
        var contentType: String?
        /// The response's `Link` values, so a cached page still leads to the next.
        var links: [String]?
        var size: Int
        var storedAt: Date
        var lastUsed: Date
    }

    /// A stored body found by ``lookup(_:)``, its file already open (eviction cannot take it
    /// away while it is read).
    struct Hit: Sendable {
        var entry: Entry
        var body: CachedBodyReader
    }

    /// The folder of the files.
    let directory: URL
    private let queue = DispatchQueue(label: "SpoutClient.ResponseCache")
    /// The index, by key hash; nil until first loaded from the directory (on the queue).
    private let index = Mutex<[String: Entry]?>(nil)

    /// The instances of this process, by standardized folder path.
    private static let instances = Mutex<[String: ResponseCache]>([:])

    private init(directory: URL) {
        self.directory = directory
    }

    /// The one instance of this process for `directory`.
    static func shared(directory: URL) -> ResponseCache {
        let path = directory.standardizedFileURL.path
        return self.instances.withLock { instances in
            if let existing = instances[path] { return existing }
            let cache = ResponseCache(directory: URL(fileURLWithPath: path, isDirectory: true))
            instances[path] = cache
            return cache
        }
    }

    /// The key of a GET: its URL, what it accepts and, when it carries credentials, whose it
    /// is (``CacheIdentity``).
    static func key(url: URL, accept: String, identity: String? = nil) -> String {
        let key = "GET \(url.absoluteString) \(accept)"
        guard let identity else { return key }
        return key + " as " + identity
    }

    /// The stored body for `key`, opened for reading, or nil.
    func lookup(_ key: String) async -> Hit? {
        await withCheckedContinuation { continuation in
            self.queue.async {
                let name = Self.fileName(for: key)
                guard let entry = self.loadedIndex()[name], entry.key == key,
                    let handle = FileHandle(forReadingAtPath: self.bodyURL(name).path)
                else {
                    continuation.resume(returning: nil)
                    return
                }
                continuation.resume(returning: Hit(entry: entry, body: CachedBodyReader(handle: handle)))
            }
        }
    }

    /// Records that the body of `key` was used now (a revalidation or a stale answer).
    func markUsed(_ key: String) {
        self.queue.async {
            let name = Self.fileName(for: key)
            guard var entry = self.loadedIndex()[name], entry.key == key else { return }
            entry.lastUsed = Date()
            self.index.withLock { $0?[name] = entry }
            self.writeMetadata(entry, name: name)
        }
    }

    /// A writer for a new body of `key`, stored under a bound of `maximumBytes`; nothing is
    /// visible to lookups until it commits.
    func writer(key: String, headers: HTTPFields, maximumBytes: Int) -> CacheWriter {
        CacheWriter(
            cache: self, key: key, etag: headers[.eTag], contentType: headers[.contentType], links: headers[values: .webLink],
            maximumBytes: maximumBytes)
    }

    // MARK: On the queue

    /// Runs `work` on the cache's queue, after everything enqueued before.
    func enqueue(_ work: @escaping @Sendable () -> Void) {
        self.queue.async(execute: work)
    }

    /// A new temporary file for a body being written (on the queue).
    func makeTemporaryFile() -> (URL, FileHandle)? {
        self.ensureDirectory()
        let url = self.directory.appendingPathComponent("tmp-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: url.path, contents: nil),
            let handle = FileHandle(forWritingAtPath: url.path)
        else { return nil }
        return (url, handle)
    }

    /// Moves a complete body into place, indexes it and evicts the least recently used bodies
    /// while all of them take more than `maximumBytes` (on the queue).
    func commit(temporary: URL, key: String, etag: String?, contentType: String?, links: [String], size: Int, maximumBytes: Int) {
        let name = Self.fileName(for: key)
        var index = self.loadedIndex()
        let now = Date()
        let entry = Entry(
            key: key, etag: etag, contentType: contentType, links: links.isEmpty ? nil : links, size: size, storedAt: now, lastUsed: now)
        do {
            _ = try? FileManager.default.removeItem(at: self.bodyURL(name))
            try FileManager.default.moveItem(at: temporary, to: self.bodyURL(name))
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            return
        }
        index[name] = entry
        self.writeMetadata(entry, name: name)
        var total = index.values.reduce(0) { $0 + $1.size }
        for (victim, old) in index.sorted(by: { $0.value.lastUsed < $1.value.lastUsed }) where total > maximumBytes {
            index[victim] = nil
            total -= old.size
            try? FileManager.default.removeItem(at: self.bodyURL(victim))
            try? FileManager.default.removeItem(at: self.metadataURL(victim))
        }
        self.index.withLock { $0 = index }
    }

    /// The index, read from the directory's metadata files the first time (on the queue).
    private func loadedIndex() -> [String: Entry] {
        if let index = self.index.withLock({ $0 }) { return index }
        var index: [String: Entry] = [:]
        let files = (try? FileManager.default.contentsOfDirectory(atPath: self.directory.path)) ?? []
        let decoder = JSONDecoder()
        for file in files where file.hasSuffix(".json") {
            let name = String(file.dropLast(".json".count))
            guard let data = try? Data(contentsOf: self.metadataURL(name)), let entry = try? decoder.decode(Entry.self, from: data),
                FileManager.default.fileExists(atPath: self.bodyURL(name).path)
            else { continue }
            index[name] = entry
        }
        // Bodies left by a process that stopped while writing.
        for file in files where file.hasPrefix("tmp-") {
            try? FileManager.default.removeItem(at: self.directory.appendingPathComponent(file))
        }
        self.index.withLock { $0 = index }
        return index
    }

    private func writeMetadata(_ entry: Entry, name: String) {
        guard let data = try? JSONEncoder().encode(entry) else { return }
        try? data.write(to: self.metadataURL(name), options: .atomic)
    }

    private func ensureDirectory() {
        try? FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
    }

    private func bodyURL(_ name: String) -> URL {
        self.directory.appendingPathComponent(name + ".body")
    }

    private func metadataURL(_ name: String) -> URL {
        self.directory.appendingPathComponent(name + ".json")
    }

    /// The 64-bit FNV-1a hash of `key`, in hex: a file name of fixed length for any URL.
    static func fileName(for key: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
