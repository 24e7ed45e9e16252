/// An ordered list of HTTP header fields; names compare case-insensitively.
public struct HeaderFields: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    public typealias Element = (name: String, value: String)

    private var names: [String]
    private var values: [String]

    public init() {
        self.names = []
        self.values = []
    }

    public init(_ fields: [(String, String)]) {
        self.names = fields.map(\.0)
        self.values = fields.map(\.1)
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The first value of the field `name`, or nil.
    public subscript(_ name: String) -> String? {
        for (index, candidate) in self.names.enumerated() where Self.equalNames(candidate, name) {
            return self.values[index]
        }
        return nil
    }

    /// Every value of the field `name`, in order.
    public func values(for name: String) -> [String] {
        self.names.indices.filter { Self.equalNames(self.names[$0], name) }.map { self.values[$0] }
    }

    public func contains(_ name: String) -> Bool {
        self.names.contains { Self.equalNames($0, name) }
    }

    /// Appends a field, keeping fields of the same name.
    public mutating func add(_ name: String, _ value: String) {
        self.names.append(name)
        self.values.append(value)
    }

    /// Removes every field `name`, then appends `name: value`.
    public mutating func replaceOrAdd(_ name: String, _ value: String) {
        self.remove(name)
        self.add(name, value)
    }

    public mutating func remove(_ name: String) {
        var index = 0
        while index < self.names.count {
            if Self.equalNames(self.names[index], name) {
                self.names.remove(at: index)
                self.values.remove(at: index)
            } else {
                index += 1
            }
        }
    }

    public var count: Int { self.names.count }

    public func makeIterator() -> some IteratorProtocol<Element> {
        zip(self.names, self.values).lazy.map { (name: $0.0, value: $0.1) }.makeIterator()
    }

    public static func == (lhs: HeaderFields, rhs: HeaderFields) -> Bool {
        lhs.names == rhs.names && lhs.values == rhs.values
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.names)
        hasher.combine(self.values)
    }

    static func equalNames(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.lowercased() == b.lowercased()
    }
}
