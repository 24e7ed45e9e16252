/// Response header fields in the order received, looked up without regard to case.
public struct SpoutHeaders: Sendable, Equatable {
    public private(set) var fields: [Field]

    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields.map { Field(name: $0.name, value: $0.value) }
    }

    /// The first value of the field `name`, or nil.
    public subscript(name: String) -> String? {
        self.fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every value of the field `name`, in the order received (`Link` may come more than once).
    public func values(_ name: String) -> [String] {
        self.fields.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }
}
