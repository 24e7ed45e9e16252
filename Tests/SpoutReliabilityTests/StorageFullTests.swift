import Foundation
import SpoutTestDatabases
import SpoutTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A database whose disk is full (the logs grew, a volume was sized too small): a write is
/// `507 {"error":"database storage full"}`, stores nothing, and is logged with its request id;
/// reads go on; once space is freed the same write succeeds. Before, it was a 500.
///
/// The disk is a tmpfs of a few MiB in a mount namespace of its own (`unshare`), so nothing of
/// the host is filled or mounted: SQLite's file is on it (Spout runs in the namespace), and
/// PostgreSQL's table is in a tablespace on it (the cluster runs in the namespace). The test
/// fills it with a ballast file written through `/proc/PID/root` of a process in the namespace,
/// and deletes the ballast to free the space.
@Suite("A database whose disk is full", .serialized)
struct StorageFullTests {
    static let endpoints = """
        paths:
          /notes:
            get:
              description: How many notes there are.
              sql: SELECT count(*) AS notes FROM note
              result: object
            post:
              description: Writes a note.
              sql: INSERT INTO note (body) VALUES (:body)
              result: none
              parameters:
                - {name: body, type: string, required: true}

        """

    /// `unshare`'s options for a mount namespace: as root, a mount namespace alone; otherwise
    /// in a user namespace of its own as well, where the user may mount a tmpfs.
    static var unshare: [String] {
        ["/usr/bin/unshare"] + (getuid() == 0 ? ["--mount", "--propagation", "private"] : ["--user", "--map-root-user", "--mount"])
    }

    /// Whether this machine lets the tests mount a tmpfs in a mount namespace of their own (a
    /// container without the capability does not): tried once, on a directory of its own.
    static let canMountTmpfs: Bool = {
        guard let directory = try? Self.makeDirectory() else { return false }
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tried = try? ChildProcess.run(
            executable: Self.unshare[0], arguments: Array(Self.unshare.dropFirst()) + ["/bin/sh", "-c", "mount -t tmpfs -o size=1m tmpfs '\(directory)/fs'"])
        return tried?.status == 0
    }()

    /// A temporary directory with an empty `fs` in it, the mount point.
    private static func makeDirectory() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-full-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/fs", withIntermediateDirectories: true)
        return directory
    }

    @Test("SQLite on a full file system: a write is 507, nothing is stored, reads go on, and it succeeds once space is freed",
          .enabled(if: Self.canMountTmpfs, "this machine lets no test mount a tmpfs in a mount namespace (unshare)"))
    func sqliteFull() async throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let mountPoint = directory + "/fs"
        let database = mountPoint + "/notes.sqlite"
        let service = try ServiceDirectory(
            databaseURL: "sqlite:\(database)", extraEndpoints: ["notes.yaml": Self.endpoints], shipped: false)
        defer { service.remove() }
        // In the namespace: the tmpfs, the table (sqlite3's shell), then Spout itself.
        let setup = """
            mount -t tmpfs -o size=4m tmpfs '\(mountPoint)' \
            && /usr/bin/sqlite3 '\(database)' 'CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT NOT NULL)' \
            && exec "$@"
            """
        let server = try await ServerProcess.start(
            arguments: ["--config", service.configFile, "--no-seed"], prefix: Self.unshare + ["/bin/sh", "-c", setup, "sh"])
        try await self.expectFullDisk(server: server, ballast: "/proc/\(server.pid)/root\(mountPoint)/ballast")
        await server.stop()
    }

    @Test("PostgreSQL with its table's tablespace on a full disk: a write is 507, nothing is stored, reads go on, and it succeeds once space is freed",
          .enabled(if: ThrowawayPostgres.isAvailable && getuid() == 0 && Self.canMountTmpfs,
                   "needs root and a mount namespace: the cluster runs in one, and PostgreSQL refuses to run as a user namespace's root"))
    func postgresFull() async throws {
        let directory = try Self.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let mountPoint = directory + "/fs"
        let setup = "mount -t tmpfs -o size=16m tmpfs '\(mountPoint)' && chown postgres '\(mountPoint)' && exec \"$@\""
        let cluster = try await onThread { try ThrowawayPostgres.create(launcher: Self.unshare + ["/bin/sh", "-c", setup, "sh"]) }
        defer { cluster.remove() }
        try await onThread {
            try cluster.psql("CREATE TABLESPACE tiny LOCATION '\(mountPoint)'")
            // Stored as written (no compression), so that the ballast's bytes are what a note takes.
            try cluster.psql("CREATE TABLE note (id serial PRIMARY KEY, body text NOT NULL) TABLESPACE tiny")
            try cluster.psql("ALTER TABLE note ALTER body SET STORAGE EXTERNAL")
        }
        let service = try ServiceDirectory(
            databaseURL: cluster.adminURL, extraEndpoints: ["notes.yaml": Self.endpoints], shipped: false)
        defer { service.remove() }
        let server = try await ServerProcess.start(arguments: ["--config", service.configFile, "--no-seed"])
        try await self.expectFullDisk(server: server, ballast: "/proc/\(try cluster.postmasterPID())/root\(mountPoint)/ballast")
        await server.stop()
    }

    /// A note is written; the disk is filled (`ballast`, a path through `/proc/PID/root` into
    /// the namespace); a note that needs new space is 507 and not stored, the count still
    /// answers; the ballast goes, and the same note is written.
    private func expectFullDisk(server: ServerProcess, ballast: String) async throws {
        func post(_ body: String) async throws -> HTTPTestResponse {
            try await RawHTTP.postForm(port: server.port, "/notes", [("body", body)])
        }
        // Random hex: neither database can make it much smaller.
        let note = (0..<200_000 / 32).map { _ in UUID().uuidString.replacingOccurrences(of: "-", with: "") }.joined()
        let first = try await post("before")
        #expect(first.status == 204, "\(first.status) \(first.text)")

        try await onThread { try Self.fill(ballast) }
        let refused = try await post(note)
        #expect(refused.status == 507, "\(refused.status) \(refused.text)")
        #expect(refused.text == #"{"error":"database storage full"}"#, "\(refused.text)")
        let counted = try await server.get("/notes")
        #expect(counted.status == 200 && counted.text == #"{"notes":1}"#, "\(counted.status) \(counted.text)")
        let log = server.log
        #expect(log.contains("http.status=507") && log.contains("request.id="), "\(log.suffix(1_500))")

        try FileManager.default.removeItem(atPath: ballast)
        let written = try await post(note)
        #expect(written.status == 204, "\(written.status) \(written.text)")
        #expect(try await server.get("/notes").text == #"{"notes":2}"#)
    }

    /// Writes zeros to `path` until the file system refuses (ENOSPC), after checking that the
    /// file system is the small tmpfs (never the host's disk, should `/proc/PID/root` not lead
    /// into the namespace).
    private static func fill(_ path: String) throws {
        var system = statvfs()
        guard statvfs((path as NSString).deletingLastPathComponent, &system) == 0,
            UInt64(system.f_blocks) * UInt64(system.f_frsize) <= 32 * 1024 * 1024
        else {
            throw RawSocket.Failure(description: "\(path) is not on the test's small tmpfs")
        }
        guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
            throw RawSocket.Failure(description: "cannot create \(path)")
        }
        defer { try? file.close() }
        let chunk = Data(count: 64 * 1024)
        var written = 0
        while true {
            do {
                try file.write(contentsOf: chunk)
                written += chunk.count
            } catch {
                break
            }
            if written > 32 * 1024 * 1024 { throw RawSocket.Failure(description: "\(path): 32 MiB written and not full") }
        }
    }
}
