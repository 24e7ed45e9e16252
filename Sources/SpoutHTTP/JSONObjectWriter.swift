import SpoutCore

/// Writes a small JSON object with string, integer, boolean, string-list and object-list fields,
/// in the order they are added. For error and status bodies; row data never goes through it.
public struct JSONObjectWriter: Sendable {
    public init() {}

    private var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var isEmpty = true

    public mutating func add(_ key: String, _ value: String) {
        self.key(key)
        JSONText.appendString(value, to: &self.bytes)
    }

    public mutating func add(_ key: String, _ value: Int) {
        self.key(key)
        self.bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func add(_ key: String, _ value: Bool) {
        self.key(key)
        self.bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// A list of objects, each written by its own writer.
    public mutating func add(_ key: String, objects: [JSONObjectWriter]) {
        self.key(key)
        self.bytes.append(UInt8(ascii: "["))
        for (index, object) in objects.enumerated() {
            if index > 0 { self.bytes.append(UInt8(ascii: ",")) }
            self.bytes.append(contentsOf: object.finished)
        }
        self.bytes.append(UInt8(ascii: "]"))
    }

    public mutating func add(_ key: String, _ values: [String]) {
        self.key(key)
        self.bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { self.bytes.append(UInt8(ascii: ",")) }
            JSONText.appendString(value, to: &self.bytes)
        }
        self.bytes.append(UInt8(ascii: "]"))
    }

    /// The finished object.
    public var finished: [UInt8] { self.bytes + [UInt8(ascii: "}")] }

    private mutating func key(_ key: String) {
        if !self.isEmpty { self.bytes.append(UInt8(ascii: ",")) }
        self.isEmpty = false
        JSONText.appendString(key, to: &self.bytes)
        self.bytes.append(UInt8(ascii: ":"))
    }
}
