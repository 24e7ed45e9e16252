import SpoutCore

/// Bounds a parameter's values beyond what its type accepts, under OpenAPI's names: `minimum`
/// and `maximum` for `integer` and `number` parameters, `minLength` and `maxLength` (in
/// characters: Unicode code points, as PostgreSQL's `varchar(n)` counts them) for `string` ones. Each bound is
/// inclusive and optional; a list's bounds apply to each element.
///
/// They let an endpoint refuse, with a 400 naming the parameter, what one database would
/// refuse with an error and the other would take: a number past an `integer` column's range
/// (PostgreSQL's `int4`, SQLite's 64-bit integers), a name longer than its `varchar(20)`
/// (enforced by PostgreSQL, not by SQLite).
public struct ParameterLimits: Sendable, Hashable {
    /// The least value accepted: `.integer` for an `integer` parameter, `.double` for a `number`.
    public var minimum: SQLValue?
    /// The greatest value accepted, of the same case as ``minimum``.
    public var maximum: SQLValue?
    /// The fewest characters a text may have.
    public var minLength: Int?
    /// The most characters a text may have.
    public var maxLength: Int?

    public init(minimum: SQLValue? = nil, maximum: SQLValue? = nil, minLength: Int? = nil, maxLength: Int? = nil) {
        self.minimum = minimum
        self.maximum = maximum
        self.minLength = minLength
        self.maxLength = maxLength
    }

    /// The text of the 400 for `value` (one converted element) when it breaks a bound, like
    /// `integer out of range (1 to 2147483647)` or `text too long (1 to 20 characters)`;
    /// nil when it keeps them all, or when they do not apply to its kind of value.
    public func violation(by value: SQLValue) -> String? {
        switch value {
        case .integer(let number):
            if case .integer(let least) = self.minimum, number < least { return self.rangeText("integer") }
            if case .integer(let most) = self.maximum, number > most { return self.rangeText("integer") }
            return nil
        case .double(let number):
            if case .double(let least) = self.minimum, number < least { return self.rangeText("number") }
            if case .double(let most) = self.maximum, number > most { return self.rangeText("number") }
            return nil
        case .text(let text):
            guard self.minLength != nil || self.maxLength != nil else { return nil }
            // A text has at most one character per UTF-8 byte and at least one per four: within
            // both bounds by its byte count, it need not be counted.
            let bytes = text.utf8.count
            if bytes <= self.maxLength ?? .max, (bytes + 3) / 4 >= self.minLength ?? 0 { return nil }
            let count = text.unicodeScalars.count
            if let most = self.maxLength, count > most { return "text too long (\(self.lengthBounds ?? ""))" }
            if let least = self.minLength, count < least { return "text too short (\(self.lengthBounds ?? ""))" }
            return nil
        default:
            return nil
        }
    }

    /// The bounds in words for documentation (`1 to 2147483647`, `at most 20 characters`),
    /// nil when there are none.
    public var summary: String? {
        let parts = [self.valueBounds, self.lengthBounds].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    private var valueBounds: String? {
        switch (self.minimum.map(Self.text), self.maximum.map(Self.text)) {
        case (let least?, let most?): return "\(least) to \(most)"
        case (let least?, nil): return "at least \(least)"
        case (nil, let most?): return "at most \(most)"
        case (nil, nil): return nil
        }
    }

    private var lengthBounds: String? {
        switch (self.minLength, self.maxLength) {
        case (let least?, let most?) where least == most: return "exactly \(Self.characters(most))"
        case (let least?, let most?): return "\(least) to \(Self.characters(most))"
        case (let least?, nil): return "at least \(Self.characters(least))"
        case (nil, let most?): return "at most \(Self.characters(most))"
        case (nil, nil): return nil
        }
    }

    private func rangeText(_ kind: String) -> String {
        self.valueBounds.map { "\(kind) out of range (\($0))" } ?? "\(kind) out of range"
    }

    private static func text(_ bound: SQLValue) -> String {
        bound.requestText(null: "null", bytes: { "\($0) bytes" })
    }

    private static func characters(_ count: Int) -> String {
        count == 1 ? "1 character" : "\(count) characters"
    }
}
