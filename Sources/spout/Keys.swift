import ArgumentParser
import Foundation
import SpoutCore
import SpoutDrivers
import SpoutEndpoints

/// `spout keys`: the keys page cursors are sealed with, kept in the database served
/// (`spout_keys`, see ``SpoutEndpoints/KeyTable``).
struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List or rotate the keys page cursors are sealed with (the table spout_keys of the database served).",
        discussion: """
            Every instance serving one database seals page cursors with the same key, which \
            Spout creates once in that database; cursorSecret (SPOUT_CURSOR_SECRET), when set, \
            is used instead. No secret is ever printed.
            """,
        subcommands: [List.self, Rotate.self],
        defaultSubcommand: List.self
    )

    /// The options both subcommands share: which database.
    struct Target: ParsableArguments {
        @Option(help: "The configuration file (default: config/spout.yaml, or $SPOUT_CONFIG).")
        var config: String?

        @Option(help: "The database URL: postgresql://… or sqlite:PATH (overrides database.url).")
        var database: String?

        /// Runs `body` on a read-write connection to the configured database, in a transaction
        /// that commits when it returns; also says whether `cursorSecret` is set.
        func withTransaction<T: Sendable>(_ body: @escaping @Sendable (any DatabaseConnection) throws -> T) async throws -> (T, secretSet: Bool) {
            let settings = try SpoutConfiguration.load(
                file: self.config, environment: ProcessInfo.processInfo.environment, overrides: .init(databaseURL: self.database))
            let database = try Drivers.open(settings.database.url, configuration: DatabaseConfiguration(maximumConnections: 1))
            defer { database.close() }
            do {
                let result = try await database.run(readOnly: false) { connection in
                    try connection.runRequest(statementTimeout: nil, transaction: .always(readOnly: false)) { try body(connection) }
                }
                return (result, !settings.cursorSecret.isEmpty)
            } catch let error as DatabaseError {
                // On standard error the operator needs the database's own reason.
                if let problem = KeyTable.lastingProblem(error, dialect: database.dialect) {
                    throw ValidationError("\(KeyTable.keysTable): \(problem)")
                }
                throw ValidationError(String(reflecting: error))
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the keys: id, what each does now (sealing, next, opening, retired) and when.")

        @OptionGroup var target: Target

        func run() async throws {
            let now = Int64(Date().timeIntervalSince1970)
            let (keys, secretSet) = try await self.target.withTransaction { connection in try KeyTable.read(on: connection) }
            if secretSet { print("note: cursorSecret is set, so `spout serve` seals page cursors with it, not with these keys") }
            guard let keys, !keys.isEmpty else {
                print("no keys yet: the first `spout serve` that serves a paged request creates \(KeyTable.keysTable) and its first key")
                return
            }
            print(Keys.row("id", "status", "created", "seals from", "opens until"))
            for key in keys {
                print(
                    Keys.row(
                        String(key.id), StoredKey.status(of: key, among: keys, at: now).rawValue, Keys.time(key.createdAt),
                        Keys.time(key.sealsFrom), key.opensUntil.map(Keys.time) ?? "-"))
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a new key: it seals from 2 minutes on, and the older keys keep opening cursors for --keep-old-hours after that.",
            discussion: """
                Running instances read the new key within a minute, so every one of them opens \
                its cursors before any seals with it. Keys whose time has ended are deleted. \
                After a leak, --keep-old-hours 0 ends the old keys as soon as the new one seals.
                """
        )

        @OptionGroup var target: Target

        @Option(help: "Hours the older keys keep opening cursors after the new key takes over.")
        var keepOldHours: Int = Int(KeyTable.defaultKeepOldSeconds / 3600)

        func validate() throws {
            guard self.keepOldHours >= 0 else { throw ValidationError("--keep-old-hours is 0 or more") }
        }

        func run() async throws {
            let now = Int64(Date().timeIntervalSince1970)
            let keep = Int64(self.keepOldHours) * 3600
            let ((added, keys), secretSet) = try await self.target.withTransaction { connection in
                try KeyTable.rotate(on: connection, now: now, keepOldSeconds: keep)
            }
            print("added key \(added.id): it seals page cursors from \(Keys.time(added.sealsFrom))")
            for key in keys where key.id != added.id {
                print("key \(key.id) opens the cursors it sealed until \(key.opensUntil.map(Keys.time) ?? "no end")")
            }
            if secretSet { print("note: cursorSecret is set, so `spout serve` seals page cursors with it, not with these keys") }
        }
    }

    static func row(_ fields: String...) -> String {
        let widths = [4, 9, 24, 24]
        return zip(fields, widths + [0]).map { field, width in field.padding(toLength: max(width, field.count), withPad: " ", startingAt: 0) }
            .joined(separator: " ").trimmingCharacters(in: .whitespaces)
    }

    static func time(_ seconds: Int64) -> String { KeyTable.utc(seconds) }
}
