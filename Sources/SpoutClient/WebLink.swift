/// One link of an RFC 8288 `Link` header: `<target>; rel="next"; title="…"`.
public struct WebLink: Sendable, Equatable {
    /// The URI reference between `<` and `>`, as written (relative or absolute).
    public var target: String
    /// The parameters after the target, names lowercased, values unquoted (`\x` unescaped).
    public var parameters: [String: String]

    public init(target: String, parameters: [String: String] = [:]) {
        self.target = target
        self.parameters = parameters
    }

    /// The relation types of `rel`, lowercased (`rel="next last"` has two).
    public var relations: [String] {
        (self.parameters["rel"] ?? "").lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
    }
}
