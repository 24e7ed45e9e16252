import Foundation

/// Building request URLs and following links without leaving the server's origin.
enum RequestTarget {
    /// `base` + `path` + the query, every name and value percent-encoded except RFC 3986's
    /// unreserved characters (so `+`, `&` and `=` in a value arrive as written).
    static func url(base: URL, path: String, query: [URLQueryItem]) throws -> URL {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        text += path.hasPrefix("/") ? path : "/" + path
        if !query.isEmpty {
            text += (path.contains("?") ? "&" : "?") + self.encode(query)
        }
        guard let url = URL(string: text) else { throw SpoutClientError.invalidURL(text) }
        return url
    }

    /// `name=value&…`, percent-encoded: a query string or a form body.
    static func encode(_ items: [URLQueryItem]) -> String {
        items.map { self.percentEncode($0.name) + "=" + self.percentEncode($0.value ?? "") }.joined(separator: "&")
    }

    /// A `Link` target resolved against the URL of the response that carried it; an absolute
    /// or relative reference is fine as long as it stays on the same scheme, host and port.
    static func resolve(link target: String, against current: URL) throws -> URL {
        guard let resolved = URL(string: target, relativeTo: current)?.absoluteURL else {
            throw SpoutClientError.invalidURL("Link target '\(target)'")
        }
        guard resolved.scheme?.lowercased() == current.scheme?.lowercased(),
            resolved.host?.lowercased() == current.host?.lowercased(),
            self.effectivePort(resolved) == self.effectivePort(current)
        else {
            throw SpoutClientError.invalidURL("Link target '\(target)' is on another origin than \(current.absoluteString)")
        }
        return resolved
    }

    private static func effectivePort(_ url: URL) -> Int {
        url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
    }

    private static let unreserved: Set<UInt8> = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8))

    private static func percentEncode(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            if self.unreserved.contains(byte) {
                encoded.append(Character(Unicode.Scalar(byte)))
            } else {
                encoded += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return encoded
    }
}
