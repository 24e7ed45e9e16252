import HTTPTypes

/// Routes requests to handlers by method and path template.
///
/// Templates are `/`-separated literal segments and `{key}` segments that match any one
/// segment. Matching rules, which callers may rely on:
/// - A literal segment wins over a key at the same position (`/employees/count` beats
///   `/employees/{employeeNumber}`); matching backtracks to the key when the literal branch
///   has no route for the rest of the path.
/// - A path no template matches is ``Match/notFound`` (404); a path that matches with no
///   handler for the method is ``Match/methodNotAllowed(allowed:)`` (405 with `Allow`).
/// - `HEAD` is served by the `GET` handler wherever there is no explicit `HEAD` route.
/// - Empty segments are ignored: `/employees/` matches `/employees`.
public struct Router: Sendable {
    public enum Match: Sendable {
        case found(Route, pathKeys: [String: String])
        case notFound
        case methodNotAllowed(allowed: [HTTPRequest.Method])
    }

    private var root = Node()
    /// Every route, in registration order (for API documentation).
    public private(set) var routes: [Route] = []
    /// Whether any route has a body limit of its own (``Route/maximumBodySize``) or streams
    /// its body (``Route/streamsBody``): only then does a request's head need routing before
    /// its body is read.
    public private(set) var hasBodyLimits = false

    public init() {}

    /// Registers `route`. A later route for the same method and template replaces the earlier one.
    public mutating func add(_ route: Route) {
        self.root.insert(route, segments: PathTemplate.segments(of: route.template)[...])
        self.routes.removeAll { $0.method == route.method && $0.template == route.template }
        self.routes.append(route)
        self.hasBodyLimits = self.routes.contains { $0.maximumBodySize != nil || $0.streamsBody }
    }

    /// Registers a handler; see ``Route/init(_:_:parameters:summary:apiKeys:handler:)``.
    public mutating func add(
        _ method: HTTPRequest.Method, _ template: String, parameters: [Parameter] = [], summary: String? = nil,
        apiKeys: APIKeySet? = nil, handler: @escaping RouteHandler
    ) {
        self.add(Route(method, template, parameters: parameters, summary: summary, apiKeys: apiKeys, handler: handler))
    }

    /// Finds the route for `method` and `path` (the path without query string, not yet decoded).
    public func match(_ method: HTTPRequest.Method, path: Substring) -> Match {
        let segments = PathTemplate.requestSegments(of: path)
        var keys: [String] = []
        guard let node = self.root.find(segments[...], keys: &keys) else { return .notFound }
        let route = node.routes[method] ?? (method == .head ? node.routes[.get] : nil)
        guard let route else {
            var allowed = Set(node.routes.keys)
            if allowed.contains(.get) { allowed.insert(.head) }
            return .methodNotAllowed(allowed: allowed.sorted { $0.rawValue < $1.rawValue })
        }
        var pathKeys: [String: String] = [:]
        for (name, value) in zip(node.keyNames(for: route), keys) {
            pathKeys[name] = value
        }
        return .found(route, pathKeys: pathKeys)
    }

    public func match(_ method: HTTPRequest.Method, path: String) -> Match {
        self.match(method, path: path[...])
    }

    /// The methods served on `path` (with `HEAD` wherever `GET` is), sorted by name; nil when
    /// no template matches it. CORS preflights answer with these.
    public func methods(path: Substring) -> [HTTPRequest.Method]? {
        var keys: [String] = []
        guard let node = self.root.find(PathTemplate.requestSegments(of: path)[...], keys: &keys) else { return nil }
        var methods = Set(node.routes.keys)
        if methods.contains(.get) { methods.insert(.head) }
        return methods.sorted { $0.rawValue < $1.rawValue }
    }

    private struct Node: Sendable {
        var literals: [String: Node] = [:]
        /// The child for a `{key}` segment; key names live on the routes (templates that
        /// differ only in key names share the node).
        var keyChild: [Node] = []
        var routes: [HTTPRequest.Method: Route] = [:]

        mutating func insert(_ route: Route, segments: ArraySlice<PathTemplate.Segment>) {
            guard let first = segments.first else {
                self.routes[route.method] = route
                return
            }
            switch first {
            case .literal(let text):
                self.literals[text, default: Node()].insert(route, segments: segments.dropFirst())
            case .key:
                if self.keyChild.isEmpty { self.keyChild.append(Node()) }
                self.keyChild[0].insert(route, segments: segments.dropFirst())
            }
        }

        /// The node at the end of `segments`, preferring literal branches, or nil. `keys`
        /// receives the values of the key segments on the way.
        func find(_ segments: ArraySlice<String>, keys: inout [String]) -> Node? {
            guard let first = segments.first else {
                return self.routes.isEmpty ? nil : self
            }
            if let literal = self.literals[first], let found = literal.find(segments.dropFirst(), keys: &keys) {
                return found
            }
            if let keyNode = self.keyChild.first {
                keys.append(first)
                if let found = keyNode.find(segments.dropFirst(), keys: &keys) { return found }
                keys.removeLast()
            }
            return nil
        }

        func keyNames(for route: Route) -> [String] {
            route.keys
        }
    }
}
