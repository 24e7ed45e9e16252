import SpoutCore

/// Converts raw textual arguments into the typed values of a route's declared parameters.
public enum ArgumentConversion {
    /// Converts `raw` for `parameters`.
    ///
    /// Returns one value per declared parameter (undeclared arguments are ignored): the
    /// converted argument, else the default, else `.null` (`.array([])` for lists). A scalar
    /// parameter given several values (a repeated key) uses the first; given a JSON array, it
    /// is a 400. A `bytes` parameter with content (a multipart part, the request body) takes
    /// its bytes as they are, and Base64 text otherwise; content that is not UTF-8 is a 400 for
    /// any other parameter.
    /// - Throws: ``ArgumentError`` for the first parameter whose argument is refused: missing,
    ///   an array for one value, text holding U+0000, not of its type, out of range, or not
    ///   allowed.
    public static func convert(_ raw: RawArguments, for parameters: [Parameter]) throws(ArgumentError) -> [String: SQLValue] {
        var values: [String: SQLValue] = [:]
        values.reserveCapacity(parameters.count)
        for parameter in parameters {
            if raw.isList(parameter.name) && !parameter.type.isList {
                throw ArgumentError(.notSingle, parameter: parameter.name)
            }
            if parameter.type.elementType == .bytes {
                let contents = raw.contents(parameter.name)
                if !contents.isEmpty {
                    values[parameter.name] = try self.convert(contents: contents, for: parameter)
                    continue
                }
            } else if raw.hasUndecodableContent(parameter.name) {
                throw ArgumentError(.invalidEncoding, parameter: parameter.name)
            }
            values[parameter.name] = try self.convert(raw[parameter.name], for: parameter)
        }
        return values
    }

    /// A `bytes` parameter's content values as they are; empty content (a form's file input
    /// left empty) counts as absent, as empty text does for every type but `string`.
    private static func convert(contents: [[UInt8]], for parameter: Parameter) throws(ArgumentError) -> SQLValue {
        let present = contents.filter { !$0.isEmpty }
        guard let first = present.first else { return try self.convert([], for: parameter) }
        return parameter.type.isList ? .array(present.map(SQLValue.bytes)) : .bytes(first)
    }

    static func convert(_ texts: [String], for parameter: Parameter) throws(ArgumentError) -> SQLValue {
        let type = parameter.type
        // Empty text is an absent value for every type but string.
        let present = type.elementType == .string || !texts.contains(where: \.isEmpty) ? texts : texts.filter { !$0.isEmpty }
        guard !present.isEmpty else {
            if let value = parameter.defaultValue { return value }
            if parameter.isRequired { throw ArgumentError(.missing, parameter: parameter.name) }
            return type.isList ? .array([]) : .null
        }
        if type.isList {
            var elements: [SQLValue] = []
            elements.reserveCapacity(present.count)
            for text in present {
                elements.append(try self.convertOne(text, for: parameter))
            }
            return .array(elements)
        }
        return try self.convertOne(present[0], for: parameter)
    }

    private static func convertOne(_ text: String, for parameter: Parameter) throws(ArgumentError) -> SQLValue {
        // Only text passes NUL through to the database: no other type converts text holding it.
        if parameter.type.elementType == .string, text.utf8.contains(0) {
            throw ArgumentError(.nulCharacter, parameter: parameter.name, value: text)
        }
        guard let value = parameter.type.convert(text) else {
            // Base64 of a file is no value to echo back.
            let shown = parameter.type.elementType == .bytes && text.utf8.count > 64 ? nil : text
            throw ArgumentError(.invalid(parameter.type), parameter: parameter.name, value: shown)
        }
        if let outOfRange = parameter.type.rangeError(for: value) ?? parameter.limits.violation(by: value) {
            throw ArgumentError(.outOfRange(outOfRange), parameter: parameter.name, value: text)
        }
        if let allowed = parameter.allowedValues, !allowed.contains(value) {
            throw ArgumentError(.notAllowed(allowed: allowed.map(Self.display)), parameter: parameter.name, value: text)
        }
        return value
    }

    /// How an allowed value is listed in a 400 body.
    static func display(_ value: SQLValue) -> String {
        value.requestText(null: "null", bytes: { "\($0) bytes" })
    }
}

/// Reads the arguments a request body carries, by content type.
enum BodyArguments {
    /// The media types whose bodies carry arguments, as a 415 lists them.
    static let mediaTypes = "application/json, application/x-www-form-urlencoded or multipart/form-data"

    /// Arguments from a form, multipart or JSON body (`application/json`, or any
    /// `application/…+json`); an empty body has none.
    ///
    /// Another media type, or none, is a 415 when the body is where the route's arguments come
    /// from (`takesArguments`: ``HTTPTypes/HTTPRequest/Method/readsArguments(fromBodyFor:)``):
    /// the body would otherwise be ignored and the request answered as if it had sent nothing.
    /// Elsewhere it carries none (the handler can still read ``Request/body``). A form body that
    /// is JSON (what `curl -d '{…}'` sends) is a 400 saying to send it as JSON.
    static func parse(_ body: [UInt8], contentType: String?, takesArguments: Bool = true) throws(ArgumentError) -> RawArguments {
        guard !body.isEmpty else { return RawArguments() }
        let mediaType = contentType.map(MediaType.essence(of:)) ?? ""
        let isJSON = mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json"))
        switch mediaType {
        case "application/x-www-form-urlencoded":
            if Self.looksLikeJSON(body) {
                throw ArgumentError(
                    .malformedBody("the body is JSON but was sent as application/x-www-form-urlencoded: send it with Content-Type: application/json"),
                    parameter: "")
            }
            return try FormURLEncoding.parse(body)
        case "multipart/form-data":
            guard let boundary = contentType.flatMap(MultipartFormData.boundary(fromContentType:)) else {
                throw ArgumentError(.malformedBody("multipart body without boundary"), parameter: "")
            }
            do {
                return try MultipartFormData.parse(body, boundary: boundary)
            } catch {
                throw ArgumentError(.malformedBody(error.reason), parameter: "")
            }
        case _ where isJSON:
            do {
                return try JSONArguments.parse(body)
            } catch {
                throw ArgumentError(.malformedBody(error.reason), parameter: "")
            }
        default:
            guard takesArguments else { return RawArguments() }
            throw ArgumentError(.unsupportedMediaType(mediaType.isEmpty ? nil : mediaType), parameter: "")
        }
    }

    /// Whether `body` starts, after blanks, with `{"` or `[`: no form's first key does.
    private static func looksLikeJSON(_ body: [UInt8]) -> Bool {
        let start = body.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }
        guard let first = start.first else { return false }
        if first == UInt8(ascii: "[") { return true }
        return first == UInt8(ascii: "{") && start.dropFirst().first == UInt8(ascii: "\"")
    }
}
