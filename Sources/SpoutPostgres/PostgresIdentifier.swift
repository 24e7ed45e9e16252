import SpoutCore

/// Quoting of identifiers that Spout puts into SQL it writes itself.
enum PostgresIdentifier {
    /// `name` as a double-quoted identifier (`my "t"` → `"my ""t"""`).
    /// - Throws: ``SpoutCore/DatabaseError/Code/invalidSQL`` for an empty name or one with NUL.
    static func quoted(_ name: String) throws -> String {
        guard !name.isEmpty, !name.utf8.contains(0) else {
            throw DatabaseError(.invalidSQL, message: "invalid identifier \(String(reflecting: name))")
        }
        var quoted = "\""
        for character in name.unicodeScalars {
            if character == "\"" { quoted.unicodeScalars.append("\"") }
            quoted.unicodeScalars.append(character)
        }
        quoted += "\""
        return quoted
    }

    /// A table name, where a dot separates the schema: `hr.employees` → `"hr"."employees"`.
    static func quotedTable(_ name: String) throws -> String {
        try name.split(separator: ".", omittingEmptySubsequences: false)
            .map { try self.quoted(String($0)) }
            .joined(separator: ".")
    }
}
