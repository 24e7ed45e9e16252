/// How a scaffolded service (``ServiceScaffold``) names what it makes from a catalog's names:
/// labels and parameters in lower camel case, paths and files in lower kebab case, SQL
/// identifiers always quoted (so any spelling the catalog holds is named exactly).
enum ScaffoldNames {
    /// `emp_no` → `empNo`, `First Name` → `firstName`, `2fa` → `c2fa`: letters and digits
    /// only, starting with a letter; `value` for a name with neither.
    static func label(_ name: String) -> String {
        let words = Self.words(name)
        guard let first = words.first else { return "value" }
        var label = first.lowercased() + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst().lowercased() }.joined()
        if let leading = label.unicodeScalars.first, !("a"..."z").contains(Character(leading)) { label = "c" + label }
        return label
    }

    /// `dept_emp` → `dept-emp`: the path segment and file name of a table.
    static func segment(_ name: String) -> String {
        let words = Self.words(name)
        return words.isEmpty ? "table" : words.map { $0.lowercased() }.joined(separator: "-")
    }

    /// `"name"`, with a double quote inside doubled: an identifier both databases read as
    /// spelled.
    static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The ASCII letter and digit runs of `name`, a lower-to-upper change starting a new one
    /// (`empNo` → `emp`, `No`).
    private static func words(_ name: String) -> [String] {
        var words: [String] = []
        var current = ""
        var previousWasLower = false
        for scalar in name.unicodeScalars {
            let isUpper = ("A"..."Z").contains(scalar)
            let isLower = ("a"..."z").contains(scalar)
            let isDigit = ("0"..."9").contains(scalar)
            guard isUpper || isLower || isDigit else {
                if !current.isEmpty { words.append(current) }
                current = ""
                previousWasLower = false
                continue
            }
            if isUpper && previousWasLower {
                words.append(current)
                current = ""
            }
            current.unicodeScalars.append(scalar)
            previousWasLower = isLower || isDigit
        }
        if !current.isEmpty { words.append(current) }
        return words
    }
}
