/// Reads the fields of a `multipart/form-data` body (RFC 7578).
///
/// Each part's `Content-Disposition: form-data; name="..."` names an argument and its content
/// is the value (``RawArguments/appendContent(_:for:)``): its bytes as they are for a `bytes`
/// parameter, its text (UTF-8) for any other; a file part contributes its content the same way.
enum MultipartFormData {
    struct SyntaxError: Error, Sendable, Hashable {
        var reason: String
    }

    /// The `boundary` parameter of a `multipart/form-data` content type, or nil.
    static func boundary(fromContentType contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingSpaces().lowercased() == "boundary" else { continue }
            var value = pair[1].trimmingSpaces()
            if value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 {
                value = String(value.dropFirst().dropLast())
            }
            return value.isEmpty ? nil : value
        }
        return nil
    }

    static func parse(_ body: [UInt8], boundary: String) throws(SyntaxError) -> RawArguments {
        let delimiter = Array("--\(boundary)".utf8)
        var arguments = RawArguments()
        guard var position = Self.find(delimiter, in: body, from: 0) else {
            throw SyntaxError(reason: "multipart body without boundary")
        }
        position += delimiter.count
        while true {
            // After a delimiter: "--" ends the body, otherwise CRLF starts a part.
            if body.count >= position + 2 && body[position] == UInt8(ascii: "-") && body[position + 1] == UInt8(ascii: "-") {
                return arguments
            }
            guard let headerStart = Self.skipLineEnd(body, at: position) else {
                throw SyntaxError(reason: "malformed multipart body")
            }
            guard let headerEnd = Self.find(Array("\r\n\r\n".utf8), in: body, from: headerStart) else {
                throw SyntaxError(reason: "malformed multipart part headers")
            }
            let headers = String(decoding: body[headerStart..<headerEnd], as: UTF8.self)
            let contentStart = headerEnd + 4
            guard let next = Self.find(Array("\r\n".utf8) + delimiter, in: body, from: contentStart) else {
                throw SyntaxError(reason: "unterminated multipart part")
            }
            if let name = Self.fieldName(headers) {
                arguments.appendContent(Array(body[contentStart..<next]), for: name)
            }
            position = next + 2 + delimiter.count
        }
    }

    private static func skipLineEnd(_ body: [UInt8], at position: Int) -> Int? {
        var index = position
        while index < body.count && (body[index] == UInt8(ascii: " ") || body[index] == UInt8(ascii: "\t")) { index += 1 }
        guard index + 1 < body.count, body[index] == UInt8(ascii: "\r"), body[index + 1] == UInt8(ascii: "\n") else { return nil }
        return index + 2
    }

    /// The `name` of the part's `Content-Disposition` header.
    private static func fieldName(_ headers: String) -> String? {
        for line in headers.split(separator: "\r\n") {
            let pair = line.split(separator: ":", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingSpaces().lowercased() == "content-disposition" else { continue }
            for parameter in pair[1].split(separator: ";").dropFirst() {
                let field = parameter.split(separator: "=", maxSplits: 1)
                guard field.count == 2, field[0].trimmingSpaces().lowercased() == "name" else { continue }
                var value = field[1].trimmingSpaces()
                if value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 {
                    value = String(value.dropFirst().dropLast())
                }
                return value
            }
        }
        return nil
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        var index = start
        let first = needle[0]
        while index + needle.count <= haystack.count {
            if haystack[index] == first && haystack[index..<(index + needle.count)].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }
}

extension Substring {
    func trimmingSpaces() -> String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
