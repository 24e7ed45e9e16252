import Foundation
import SpoutCore
import SpoutDrivers
import SpoutEndpoints
import SpoutTestDatabases
import SpoutTestSupport

/// A test database that Spout reaches as an ordinary login role, so that row-level security
/// applies (a superuser, as the throwaway cluster's own user is, bypasses it). On SQLite the
/// database is used as it is.
///
/// On PostgreSQL: a login role `spout_app_N` with the rights of `grants`, and NOLOGIN roles
/// `spout_app_N_reader`, `_writer` and `_anon` granted to it (so it may switch to them);
/// ``drop()`` removes the database and the roles.
struct IdentityDatabase {
    let temporary: TemporaryDatabase
    /// The URL Spout connects with (the login role's on PostgreSQL).
    let url: String
    /// The login role, and the roles it may switch to (PostgreSQL).
    let appRole: String
    var reader: String { self.appRole + "_reader" }
    var writer: String { self.appRole + "_writer" }
    var anonymous: String { self.appRole + "_anon" }

    /// Creates the database, runs `setup` on it as the cluster's superuser, then creates the
    /// roles (PostgreSQL).
    static func make(_ backend: SQLDialect, setup: @escaping @Sendable (any DatabaseConnection) throws -> Void) throws -> IdentityDatabase {
        let temporary = backend == .sqlite ? TestDatabases.makeSQLiteDatabase() : try TestDatabases.makePostgresDatabase(prefix: "spout_t_identity")
        let owner = try Drivers.driver(for: temporary.url).connect(readOnly: false, statistics: QueryStatistics())
        defer { owner.close() }
        try setup(owner)
        guard backend == .postgres else { return IdentityDatabase(temporary: temporary, url: temporary.url, appRole: "") }
        let (url, role) = try Self.createLoginRole(on: owner, url: temporary.url)
        try owner.executeScript("""
            CREATE ROLE \(role)_reader NOLOGIN; CREATE ROLE \(role)_writer NOLOGIN; CREATE ROLE \(role)_anon NOLOGIN;
            GRANT \(role)_reader, \(role)_writer, \(role)_anon TO \(role);
            """)
        return IdentityDatabase(temporary: temporary, url: url, appRole: role)
    }

    /// Creates a login role (neither superuser nor owner) with the rights to read and write
    /// every table of the database `owner` is connected to (at `url`); returns the URL that
    /// logs in as it, and its name. Drop it with ``dropRoles(_:database:)``.
    static func createLoginRole(on owner: any DatabaseConnection, url: String) throws -> (url: String, role: String) {
        let role = "spout_app_\(UInt32.random(in: .min ... .max))"
        try owner.executeScript("""
            CREATE ROLE \(role) LOGIN;
            GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO \(role);
            GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO \(role);
            """)
        var components = URLComponents(string: url)!
        components.user = role
        components.password = nil
        return (components.string!, role)
    }

    /// Drops `database` and then `roles` (their rights in it first, so the drop cannot fail
    /// on them).
    static func dropRoles(_ roles: [String], database: TemporaryDatabase) {
        if let owner = try? Drivers.driver(for: database.url).connect(readOnly: false, statistics: QueryStatistics()) {
            try? owner.executeScript("DROP OWNED BY \(roles.joined(separator: ", "))")
            owner.close()
        }
        database.drop()
        if let admin = try? Drivers.driver(for: TestDatabases.postgresURL ?? "").connect(readOnly: false, statistics: QueryStatistics()) {
            try? admin.executeScript("DROP ROLE IF EXISTS \(roles.joined(separator: ", "))")
            admin.close()
        }
    }

    /// The endpoints of one endpoint file, `yaml`, in a configuration of its own on this
    /// database (written to a temporary folder and loaded).
    func endpoints(_ yaml: String) throws -> EndpointSet {
        let service = try TemporaryDirectory()
        try service.write("config/spout.yaml", "database:\n  url: \(self.url)\nendpoints: [api/*.yaml]\n")
        try service.write("config/api/endpoints.yaml", yaml)
        let configuration = try SpoutConfiguration.load(
            file: (service.path as NSString).appendingPathComponent("config/spout.yaml"), environment: [:])
        return try EndpointSet.load(configuration: configuration, environment: [:])
    }

    func open(_ configuration: DatabaseConfiguration = DatabaseConfiguration()) throws -> Database {
        Database(driver: try Drivers.driver(for: self.url), configuration: configuration)
    }

    func drop() {
        if self.appRole.isEmpty {
            self.temporary.drop()
        } else {
            Self.dropRoles([self.reader, self.writer, self.anonymous, self.appRole], database: self.temporary)
        }
    }
}
