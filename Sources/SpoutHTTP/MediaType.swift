/// Media types as `Content-Type` fields and endpoint files write them.
public enum MediaType {
    /// The essence of `value` (RFC 9110 §8.3.1): its type and subtype in lower case, without
    /// parameters or the blanks around them: `Text/CSV; charset=utf-8` is `text/csv`.
    public static func essence(of value: String) -> String {
        value.split(separator: ";", maxSplits: 1).first.map { $0.trimmingSpaces().lowercased() } ?? ""
    }
}
