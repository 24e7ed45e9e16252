import SpoutCore

/// Converts raw textual arguments into the typed values of a route's declared parameters.
public enum ArgumentConversion {
    /// Converts `raw` for `parameters`.
    ///
    /// Returns one value per declared parameter (undeclared arguments are ignored): the
    /// converted argument, else the default, else `.null` (`.array([])` for lists). A scalar
    /// parameter given several values (a repeated key) uses the first; given a JSON array, it
    /// is a 400.
    /// - Throws: ``ArgumentError`` for the first parameter that is missing, invalid, out of range
    ///   or not allowed.
    public static func convert(_ raw: RawArguments, for parameters: [Parameter]) throws(ArgumentError) -> [String: SQLValue] {
        var values: [String: SQLValue] = [:]
        values.reserveCapacity(parameters.count)
        for parameter in parameters {
            if raw.isList(parameter.name) && !parameter.type.isList {
                throw ArgumentError(.notSingle, parameter: parameter.name)
            }
            values[parameter.name] = try self.convert(raw[parameter.name], for: parameter)
        }
        return values
    }

    static func convert(_ texts: [String], for parameter: Parameter) throws(ArgumentError) -> SQLValue {
        let type = parameter.type
        // Empty text is an absent value for every type but string.
        let present = type.elementType == .string ? texts : texts.filter { !$0.isEmpty }
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
            throw ArgumentError(.invalid(parameter.type), parameter: parameter.name, value: text)
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
    /// Arguments from a form, multipart or JSON body; an empty body or another content type
    /// has none (the handler can still read ``Request/body``).
    static func parse(_ body: [UInt8], contentType: String?) throws(ArgumentError) -> RawArguments {
        guard !body.isEmpty, let contentType else { return RawArguments() }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingSpaces().lowercased() } ?? ""
        switch mediaType {
        case "application/x-www-form-urlencoded":
            return try FormURLEncoding.parse(body)
        case "multipart/form-data":
            guard let boundary = MultipartFormData.boundary(fromContentType: contentType) else {
                throw ArgumentError(.malformedBody("multipart body without boundary"), parameter: "")
            }
            do {
                return try MultipartFormData.parse(body, boundary: boundary)
            } catch {
                throw ArgumentError(.malformedBody(error.reason), parameter: "")
            }
        case "application/json":
            do {
                return try JSONArguments.parse(body)
            } catch {
                throw ArgumentError(.malformedBody(error.reason), parameter: "")
            }
        default:
            return RawArguments()
        }
    }
}
