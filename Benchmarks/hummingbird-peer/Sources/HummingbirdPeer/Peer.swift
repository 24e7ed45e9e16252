// The detail request the way a hand-written Hummingbird 2 service with PostgresNIO answers it:
// async handlers on SwiftNIO, a PostgresClient pool, the parent statement and then one
// statement per attached array (three round trips, each an unnamed statement, as `query`
// sends them), each row written as a JSON object keyed by column label into one buffer.
//
//   HummingbirdPeer PORT POSTGRES_URL SQL_DIRECTORY POOL_SIZE
//
// GET /employees/{n}?details=titles&details=salaries answers Spout's bytes: dates as epoch
// milliseconds (UTC), integers as numbers, text as JSON strings. GET /health answers
// {"status":"ok"} with no database: the framework's HTTP floor.

import Foundation
import Hummingbird
import Logging
import PostgresNIO

@main
struct Peer {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count == 5, let port = Int(arguments[1]), let url = URLComponents(string: arguments[2]), let poolSize = Int(arguments[4])
        else {
            FileHandle.standardError.write(Data("usage: HummingbirdPeer PORT POSTGRES_URL SQL_DIRECTORY POOL_SIZE\n".utf8))
            exit(2)
        }

        /// One of Spout's SQL files with `:employeeNumber` as `$1`.
        func statement(_ file: String) throws -> String {
            let path = URL(fileURLWithPath: arguments[3]).appendingPathComponent("employees").appendingPathComponent(file)
            return try String(contentsOf: path, encoding: .utf8).replacingOccurrences(of: ":employeeNumber", with: "$1")
        }

        let parentSQL = try statement("employee.sql")
        let childSQL = ["titles": try statement("titles.sql"), "salaries": try statement("salaries.sql")]

        var configuration = PostgresClient.Configuration(
            host: url.host ?? "127.0.0.1", port: url.port ?? 5432, username: url.user ?? "postgres", password: url.password,
            database: String(url.path.dropFirst()), tls: .disable)
        configuration.options.minimumConnections = poolSize
        configuration.options.maximumConnections = poolSize
        let client = PostgresClient(configuration: configuration)

        let router = Router()
        router.get("/employees/:number") { request, context -> Response in
            guard let number = context.parameters.get("number", as: Int.self) else { throw HTTPError(.badRequest) }
            let details = request.uri.queryParameters.getAll("details")
            var buffer = ByteBuffer()
            buffer.reserveCapacity(512)
            try await client.withConnection { connection in
                var bindings = PostgresBindings()
                bindings.append(number)
                var found = false
                for try await row in try await connection.query(PostgresQuery(unsafeSQL: parentSQL, binds: bindings), logger: context.logger) {
                    found = true
                    buffer.writeInteger(UInt8(ascii: "{"))
                    try JSON.appendColumns(row, to: &buffer)
                }
                guard found else { throw HTTPError(.notFound) }
                for detail in details {
                    guard let sql = childSQL[String(detail)] else { continue }
                    buffer.writeInteger(UInt8(ascii: ","))
                    JSON.appendString(String(detail), to: &buffer)
                    buffer.writeStaticString(":[")
                    var first = true
                    for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: context.logger) {
                        if !first { buffer.writeInteger(UInt8(ascii: ",")) }
                        first = false
                        buffer.writeInteger(UInt8(ascii: "{"))
                        try JSON.appendColumns(row, to: &buffer)
                        buffer.writeInteger(UInt8(ascii: "}"))
                    }
                    buffer.writeInteger(UInt8(ascii: "]"))
                }
                buffer.writeInteger(UInt8(ascii: "}"))
            }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: buffer))
        }
        router.get("/health") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{\"status\":\"ok\"}")))
        }

        var logger = Logger(label: "peer")
        logger.logLevel = .error
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), services: [client],
            onServerRunning: { _ in FileHandle.standardOutput.write(Data("listening on \(port)\n".utf8)) }, logger: logger)
        try await app.runService()
    }
}

/// The JSON the rows are written as.
enum JSON {
    /// Appends `text` as a JSON string.
    static func appendString(_ text: String, to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): buffer.writeStaticString("\\\"")
            case UInt8(ascii: "\\"): buffer.writeStaticString("\\\\")
            case ..<0x20: buffer.writeString(String(format: "\\u%04x", Int(byte)))
            default: buffer.writeInteger(byte)
            }
        }
        buffer.writeInteger(UInt8(ascii: "\""))
    }

    /// Appends the row's columns, `"label":value` separated by commas.
    static func appendColumns(_ row: PostgresRow, to buffer: inout ByteBuffer) throws {
        var first = true
        for cell in row {
            if !first { buffer.writeInteger(UInt8(ascii: ",")) }
            first = false
            Self.appendString(cell.columnName, to: &buffer)
            buffer.writeInteger(UInt8(ascii: ":"))
            guard cell.bytes != nil else {
                buffer.writeStaticString("null")
                continue
            }
            switch cell.dataType {
            case .int2, .int4, .int8:
                buffer.writeString(String(try cell.decode(Int.self, context: .default)))
            case .date:
                let date = try cell.decode(Date.self, context: .default)
                buffer.writeString(String(Int64((date.timeIntervalSince1970 * 1000).rounded())))
            default:
                Self.appendString(try cell.decode(String.self, context: .default), to: &buffer)
            }
        }
    }
}
