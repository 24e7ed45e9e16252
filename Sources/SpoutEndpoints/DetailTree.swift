import HTTPTypes
import SpoutCore
import SpoutHTTP

/// An endpoint's details prepared for one database: each detail's SQL for its dialect, parsed
/// once, with its own details below it. Turns the paths a request selects
/// (`?details=employees&details=employees.titles`) into attached streams, after checking them.
struct DetailTree: Sendable {
    /// One detail: its name, its SQL (nil `parsed` when it does not parse: the request then
    /// reports the error) and its details.
    struct Node: Sendable {
        let name: String
        let sql: String
        let parsed: ParsedSQL?
        let children: [Node]
    }

    let nodes: [Node]
    /// Selections already checked, by the paths as the request listed them: the same few
    /// come with every request of an app (only ones that passed the checks are kept).
    private let checked = BoundedCache<[String], Set<String>>(capacity: 256)
    /// Longer lists are checked every time rather than remembered (a list can repeat a path).
    private static let remembered = 16

    init(_ details: [EndpointDetail], dialect: SQLDialect) {
        self.nodes = Self.nodes(details, dialect: dialect)
    }

    private static func nodes(_ details: [EndpointDetail], dialect: SQLDialect) -> [Node] {
        details.map { detail in
            let sql = detail.sql.text(for: dialect)
            return Node(
                name: detail.name, sql: sql, parsed: try? ParsedSQL(sql, dialect: dialect),
                children: Self.nodes(detail.details, dialect: dialect))
        }
    }

    /// Every parameter name the details' SQL uses, at every level.
    var parameterNames: Set<String> {
        var names: Set<String> = []
        var pending = self.nodes
        while let node = pending.popLast() {
            names.formUnion(node.parsed?.parameterNames ?? [])
            pending.append(contentsOf: node.children)
        }
        return names
    }

    /// The paths `argument` (the details parameter's value) selects, checked: each names a
    /// detail level by level, and the path of its parent is selected too.
    /// - Throws: ``ArgumentError`` naming `parameter`: an unknown name is not allowed (the body
    ///   lists the paths allowed at that level), a detail without its parent is rejected.
    func selection(_ argument: SQLValue?, parameter: String) throws -> Set<String> {
        guard case .array(let values)? = argument else { return [] }
        let listed = values.compactMap { value -> String? in
            if case .text(let path) = value { return path }
            return nil
        }
        if listed.count <= Self.remembered, let known = self.checked[listed] { return known }
        let paths = try self.check(Set(listed), parameter: parameter)
        if listed.count <= Self.remembered { self.checked.store(paths, for: listed) }
        return paths
    }

    /// `paths`, each checked as ``selection(_:parameter:)`` says.
    private func check(_ paths: Set<String>, parameter: String) throws -> Set<String> {
        for path in paths.sorted() {
            var level = self.nodes
            var prefix = ""
            for name in path.split(separator: EndpointDetail.pathSeparator, omittingEmptySubsequences: false) {
                guard let node = level.first(where: { $0.name == name }) else {
                    throw ArgumentError(.notAllowed(allowed: level.map { prefix + $0.name }), parameter: parameter, value: path)
                }
                level = node.children
                prefix += node.name + String(EndpointDetail.pathSeparator)
            }
            if let separator = path.lastIndex(of: EndpointDetail.pathSeparator), !paths.contains(String(path[..<separator])) {
                let parent = String(path[..<separator])
                throw ArgumentError(
                    .rejected("detail '\(path)' needs its parent: add \(parameter)=\(parent)"), parameter: parameter, value: path)
            }
        }
        return paths
    }

    /// Attaches the `selected` details to `stream`, in declaration order at every level.
    func attach(_ selected: Set<String>, to stream: inout RowStream) {
        Self.attach(self.nodes, selected: selected, prefix: "", to: &stream)
    }

    private static func attach(_ nodes: [Node], selected: Set<String>, prefix: String, to stream: inout RowStream) {
        for node in nodes where selected.contains(prefix + node.name) {
            var child = node.parsed.map { RowStream($0) } ?? RowStream(node.sql)
            Self.attach(node.children, selected: selected, prefix: prefix + node.name + String(EndpointDetail.pathSeparator), to: &child)
            stream.attach(node.name, child)
        }
    }
}

/// A request for CSV that selects details: CSV has no place for arrays (HTTP 406). The body
/// names the details parameter and the first detail selected.
struct DetailsInCSVError: HTTPResponseError {
    let parameter: String
    let detail: String

    var status: HTTPResponse.Status { .notAcceptable }

    var responseBody: [UInt8] {
        var object = JSONObjectWriter()
        object.add("error", "details are arrays, which CSV cannot hold: ask for JSON or JSON Lines, or leave out the detail")
        object.add("parameter", self.parameter)
        object.add("value", self.detail)
        return object.finished
    }
}
