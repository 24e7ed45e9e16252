/// Media types as `Content-Type` fields and endpoint files write them.
public enum MediaType {
    /// The essence of `value` (RFC 9110 §8.3.1): its type and subtype in lower case, without
    /// parameters or the blanks around them: `Text/CSV; charset=utf-8` is `text/csv`.
    public static func essence(of value: String) -> String {
        value.split(separator: ";", maxSplits: 1).first.map { $0.trimmingSpaces().lowercased() } ?? ""
    }

    /// Whether the media type `value` lies within `range`, both compared by their essence:
    /// `image/png` is within `image/png`, `image/*` and `*/*`; nothing is within an empty range.
    public static func isWithin(_ value: String, range: String) -> Bool {
        let essence = self.essence(of: value)
        let range = self.essence(of: range)
        guard !essence.isEmpty, !range.isEmpty else { return false }
        if range == "*/*" { return true }
        if range.hasSuffix("/*") { return essence.hasPrefix(range.dropLast()) }
        return essence == range
    }
}
