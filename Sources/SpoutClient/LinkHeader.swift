/// Parses `Link` header values (RFC 8288, section 3).
///
/// Tolerant the way a client should be: a link whose `<…>` is missing or unterminated is
/// skipped and parsing resumes at the next top-level comma; commas inside `<…>` and quoted
/// strings do not split links; for a parameter given twice the first occurrence counts, as
/// the RFC says of `rel`.
public enum LinkHeader {
    /// The links of one or more `Link` field values, in order.
    public static func parse(_ values: [String]) -> [WebLink] {
        values.flatMap { self.parse($0) }
    }

    /// The links of one `Link` field value, in order.
    public static func parse(_ value: String) -> [WebLink] {
        var links: [WebLink] = []
        var input = Substring(value)
        while !input.isEmpty {
            Self.skipWhitespace(&input)
            guard input.first == "<", let close = input.firstIndex(of: ">") else {
                Self.skipPastTopLevelComma(&input)
                continue
            }
            var link = WebLink(target: String(input[input.index(after: input.startIndex)..<close]))
            input = input[input.index(after: close)...]
            while true {
                Self.skipWhitespace(&input)
                guard input.first == ";" else { break }
                input.removeFirst()
                Self.skipWhitespace(&input)
                let name = input.prefix { !"=;, \t".contains($0) }.lowercased()
                input = input.dropFirst(name.count)
                Self.skipWhitespace(&input)
                var parameterValue = ""
                if input.first == "=" {
                    input.removeFirst()
                    Self.skipWhitespace(&input)
                    if input.first == "\"" {
                        parameterValue = Self.quotedString(&input)
                    } else {
                        let token = input.prefix { !";, \t".contains($0) }
                        parameterValue = String(token)
                        input = input.dropFirst(token.count)
                    }
                }
                if !name.isEmpty && link.parameters[name] == nil { link.parameters[name] = parameterValue }
            }
            links.append(link)
            Self.skipPastTopLevelComma(&input)
        }
        return links
    }

    /// The target of the first link whose relations include `relation` (`"next"`).
    public static func target(of relation: String, in values: [String]) -> String? {
        self.parse(values).first { $0.relations.contains(relation.lowercased()) }?.target
    }

    /// Reads `"…"` at the start of `input` (unescaping `\x`), leaving `input` after it.
    private static func quotedString(_ input: inout Substring) -> String {
        input.removeFirst()
        var text = ""
        while let character = input.first {
            input.removeFirst()
            if character == "\"" { return text }
            if character == "\\", let escaped = input.first {
                input.removeFirst()
                text.append(escaped)
            } else {
                text.append(character)
            }
        }
        return text
    }

    private static func skipWhitespace(_ input: inout Substring) {
        input = input.drop { $0 == " " || $0 == "\t" }
    }

    /// Drops everything up to and including the next comma outside `<…>` and quotes.
    private static func skipPastTopLevelComma(_ input: inout Substring) {
        var inQuotes = false
        var inTarget = false
        while let character = input.first {
            input.removeFirst()
            if inQuotes {
                if character == "\\" { _ = input.popFirst() } else if character == "\"" { inQuotes = false }
            } else if inTarget {
                if character == ">" { inTarget = false }
            } else if character == "\"" {
                inQuotes = true
            } else if character == "<" {
                inTarget = true
            } else if character == "," {
                return
            }
        }
    }
}
