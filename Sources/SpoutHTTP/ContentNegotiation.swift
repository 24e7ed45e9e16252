import HTTPTypes
import SpoutCore

/// Picks the output format of a row stream from the request's `Accept` header.
///
/// Offered: `application/json` (the default, and what `*/*` and `application/*` get),
/// `application/x-ndjson` (also `application/jsonl`, `application/jsonlines`) and `text/csv`.
/// Each offered format takes the q-value of the most specific media range that matches it;
/// the highest q wins, ties go to the order above, and q=0 excludes. Media-type parameters
/// other than `q` are ignored. No `Accept` (or an empty one) means JSON.
public enum ContentNegotiation {
    /// The formats offered, in order of preference.
    public static let offered: [(mediaType: String, format: OutputFormat)] = [
        ("application/json", .json(pretty: false)),
        ("application/x-ndjson", .jsonLines),
        ("application/jsonl", .jsonLines),
        ("application/jsonlines", .jsonLines),
        ("text/csv", .csv),
    ]

    /// The error for a request whose `Accept` allows none of the ``offered`` formats.
    public static let notAcceptable = HTTPError(
        status: .notAcceptable, message: "not acceptable: ask for application/json, application/x-ndjson or text/csv")

    /// The format to send, or nil when nothing offered is acceptable (406).
    public static func format(accept: String?) -> OutputFormat? {
        self.format(accept: accept, offering: self.offered)
    }

    /// The format of `offered` (media types in lower case, without parameters, in order of
    /// preference) to send by the rules above, the first when there is no `Accept`; nil when
    /// none is acceptable (406).
    public static func format(accept: String?, offering offered: [(mediaType: String, format: OutputFormat)]) -> OutputFormat? {
        guard let accept, !accept.allSatisfy({ $0 == " " }) else { return offered.first?.format }
        var ranges: [(type: Substring, subtype: Substring, q: Double)] = []
        for item in accept.split(separator: ",") {
            let parts = item.split(separator: ";")
            guard let mediaRange = parts.first else { continue }
            let range = mediaRange.trimmingSpaces().lowercased()
            let pieces = range.split(separator: "/", maxSplits: 1)
            guard pieces.count == 2 else { continue }
            var q = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                if pair.count == 2, pair[0].trimmingSpaces() == "q" {
                    q = Double(pair[1].trimmingSpaces()) ?? 0
                }
            }
            ranges.append((pieces[0], pieces[1], q))
        }
        var best: (format: OutputFormat, q: Double)?
        for (mediaType, format) in offered {
            let pieces = mediaType.split(separator: "/")
            var specificity = -1
            var quality = 0.0
            for range in ranges {
                let score: Int
                if range.type == pieces[0] && range.subtype == pieces[1] {
                    score = 2
                } else if range.type == pieces[0] && range.subtype == "*" {
                    score = 1
                } else if range.type == "*" && range.subtype == "*" {
                    score = 0
                } else {
                    continue
                }
                if score > specificity {
                    specificity = score
                    quality = range.q
                }
            }
            if quality > 0, quality > (best?.q ?? 0) {
                best = (format, quality)
            }
        }
        return best?.format
    }
}
