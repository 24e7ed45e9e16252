import HTTPTypes
import Logging
import SpoutCore
import SpoutHTTP

extension EndpointSet {
    /// The database's plan of the statement Spout sends for the request `method target`
    /// (`GET /employees?lastName=Haddad`) on `database`, without running it: the request is
    /// routed, its arguments converted and its endpoint asked for its rows exactly as the
    /// server does, then ``SpoutCore/RowStream/explain(shape:on:)`` explains that statement
    /// (the parent's; attached details are not explained). `spout explain` prints it.
    ///
    /// - Throws: ``ExplainError`` when no read endpoint answers the request with rows (unknown
    ///   path, a method other than GET or HEAD, which is refused before anything runs, `?api`); an ``SpoutHTTP/ArgumentError`` for an argument the
    ///   server would answer with a 400; the database's error.
    public func explain(_ method: HTTPRequest.Method, _ target: String, database: Database) async throws -> [String] {
        guard method == .get || method == .head else {
            throw ExplainError(description: "\(method) is not a read; only GET requests can be explained")
        }
        let router = self.makeRouter(database: database, logger: Logger(label: "spout.explain", factory: { _ in SwiftLogNoOpLogHandler() }))
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0])
        let queryString = parts.count > 1 ? String(parts[1]) : nil
        guard case .found(let route, let pathKeys) = router.match(method, path: path) else {
            throw ExplainError(description: "no endpoint answers \(method) \(path)")
        }
        var raw = RawArguments()
        for key in route.keys {
            if let value = pathKeys[key] { raw.append(value, for: key) }
        }
        raw.merge(try FormURLEncoding.parse(queryString ?? ""))
        let arguments = try ArgumentConversion.convert(raw, for: route.parameters)
        let request = Request(
            method: method, path: path, queryString: queryString, routeTemplate: route.template, pathKeys: pathKeys,
            rawArguments: raw, arguments: arguments)
        let response = try await route.handler(request)
        guard case .produced(let producer) = response.body, let rows = producer as? RowResult else {
            throw ExplainError(description: "\(method) \(route.template) does not read rows; only reads can be explained")
        }
        let stream = rows.stream
        let shape = rows.shape
        return try await database.run(readOnly: rows.readOnly) { connection in
            try stream.explain(shape: shape, on: connection)
        }
    }
}

/// A request ``EndpointSet/explain(_:_:database:)`` cannot explain.
public struct ExplainError: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(description: String) {
        self.description = description
    }
}
