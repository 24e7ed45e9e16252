import SpoutCore

/// A JSON value with object members in insertion order, for generated documents (OpenAPI).
/// Row data never goes through it.
indirect enum JSONValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    init(stringLiteral value: String) { self = .string(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements) }

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool { lhs.text(pretty: false) == rhs.text(pretty: false) }
    func hash(into hasher: inout Hasher) { hasher.combine(self.text(pretty: false)) }

    /// The JSON value of a parameter's value, as a client would send it.
    init(_ value: SQLValue) {
        switch value {
        case .null: self = .null
        case .integer(let integer): self = .integer(integer)
        case .double(let double): self = double.isFinite ? .number(double) : .null
        case .decimal(let text), .text(let text), .time(let text), .json(let text): self = .string(text)
        case .bool(let bool): self = .bool(bool)
        case .date(let days): self = .string(CivilTime.formatDate(days: days))
        case .timestamp(let microseconds): self = .string(CivilTime.formatTimestamp(microseconds: microseconds))
        case .bytes: self = .null
        case .array(let items): self = .array(items.map(JSONValue.init))
        }
    }

    /// Appends `key: value` to an object (no-op for other values).
    mutating func set(_ key: String, _ value: JSONValue) {
        guard case .object(var members) = self else { return }
        members.removeAll { $0.0 == key }
        members.append((key, value))
        self = .object(members)
    }

    /// The serialized value; pretty output indents by two spaces.
    func text(pretty: Bool) -> String {
        var output = ""
        self.write(to: &output, pretty: pretty, indent: 0)
        return output
    }

    private func write(to output: inout String, pretty: Bool, indent: Int) {
        switch self {
        case .null: output += "null"
        case .bool(let bool): output += bool ? "true" : "false"
        case .integer(let integer): output += String(integer)
        case .number(let number):
            output += number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .string(let string): Self.writeString(string, to: &output)
        case .array(let items):
            guard !items.isEmpty else {
                output += "[]"
                return
            }
            output += "["
            for (index, item) in items.enumerated() {
                if index > 0 { output += "," }
                if pretty { output += "\n" + String(repeating: " ", count: indent + 2) }
                item.write(to: &output, pretty: pretty, indent: indent + 2)
            }
            if pretty { output += "\n" + String(repeating: " ", count: indent) }
            output += "]"
        case .object(let members):
            guard !members.isEmpty else {
                output += "{}"
                return
            }
            output += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { output += "," }
                if pretty { output += "\n" + String(repeating: " ", count: indent + 2) }
                Self.writeString(key, to: &output)
                output += pretty ? ": " : ":"
                value.write(to: &output, pretty: pretty, indent: indent + 2)
            }
            if pretty { output += "\n" + String(repeating: " ", count: indent) }
            output += "}"
        }
    }

    private static func writeString(_ string: String, to output: inout String) {
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}
