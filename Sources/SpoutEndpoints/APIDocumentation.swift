import HTTPTypes
import SpoutCore
import SpoutHTTP

/// The HTML page `GET <path>?api` answers: every endpoint whose path starts with the request's
/// path (a `{key}` segment matches any value), grouped by path, with its methods, parameters
/// (type, required, default, allowed values), result and description.
struct APIDocumentation: Sendable {
    let endpoints: EndpointSet

    /// What the page may do: its own inline style and links, nothing loaded or run (no script,
    /// no frame, no form), and no other site may frame it.
    static let contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The page for `path` (200), or a page saying nothing is there (404).
    func response(for path: String) -> Response {
        let matching = self.endpoints(under: path)
        return .text(
            self.page(for: path, matching: matching), contentType: "text/html; charset=utf-8",
            status: matching.isEmpty ? .notFound : .ok, headers: [.contentSecurityPolicy: Self.contentSecurityPolicy])
    }

    func page(for path: String) -> String {
        self.page(for: path, matching: self.endpoints(under: path))
    }

    /// The endpoints whose template starts with the segments of `path` (not yet decoded).
    func endpoints(under path: String) -> [Endpoint] {
        let requested = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map {
            FormURLEncoding.decode($0, plusAsSpace: false)
        }
        return self.endpoints.endpoints.filter { endpoint in
            let template = EndpointPath.segments(of: endpoint.path)
            guard template.count >= requested.count else { return false }
            return zip(template, requested).allSatisfy { segment, value in
                EndpointPath.isKey(segment) || segment == value
            }
        }
    }

    private func page(for path: String, matching: [Endpoint]) -> String {
        let title = "\(self.endpoints.title) API: \(path)"
        var html = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <title>\(Self.escape(title))</title>
            <style>
            body { font-family: sans-serif; margin: 2em; max-width: 60em; }
            h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 1.5em; font-family: monospace; }
            h3 { font-family: monospace; }
            table { border-collapse: collapse; margin: 0.5em 0; }
            th, td { border: 1px solid #ddd; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
            code, .type { font-family: monospace; }
            .required { font-weight: bold; }
            </style>
            </head>
            <body>
            <h1>\(Self.escape(title))</h1>

            """
        if matching.isEmpty {
            html += "<p>No endpoint under this path.</p>\n"
        } else {
            html += "<p>The OpenAPI document of every endpoint is at <a href=\"\(EndpointSet.openAPIPath)\">\(EndpointSet.openAPIPath)</a>.</p>\n"
        }
        var paths: [String] = []
        for endpoint in matching where !paths.contains(endpoint.path) { paths.append(endpoint.path) }
        for path in paths {
            html += "<h2>\(Self.escape(path))</h2>\n"
            for endpoint in matching where endpoint.path == path {
                html += self.section(endpoint)
            }
        }
        html += "</body>\n</html>\n"
        return html
    }

    private func section(_ endpoint: Endpoint) -> String {
        var html = "<h3>\(Self.escape(endpoint.method.rawValue)) \(Self.escape(endpoint.path))</h3>\n"
        if let summary = endpoint.summary { html += "<p>\(Self.escape(summary))</p>\n" }
        if endpoint.requiresAPIKey {
            html += "<p>Requires an API key: <code>Authorization: Bearer &lt;key&gt;</code> or <code>X-API-Key: &lt;key&gt;</code>.</p>\n"
        }
        if let policy = endpoint.tokenPolicy {
            var text = policy.anonymous ? "Takes a verified token" : "Requires a verified token"
            text += ": <code>Authorization: Bearer &lt;JWT&gt;</code>"
            if !policy.roles.isEmpty { text += ", with the role " + policy.roles.map { "<code>\(Self.escape($0))</code>" }.joined(separator: " or ") }
            if !policy.requiredClaims.isEmpty {
                text += policy.roles.isEmpty ? ", " : " and "
                text += "carrying the claim" + (policy.requiredClaims.count > 1 ? "s " : " ")
                text += policy.requiredClaims.map { "<code>\(Self.escape($0))</code>" }.joined(separator: ", ")
            }
            html += "<p>\(text).</p>\n"
        }
        if !endpoint.parameters.isEmpty {
            html += "<table>\n<tr><th>Parameter</th><th>Type</th><th>Required</th><th>Default</th><th>Allowed</th><th>Description</th></tr>\n"
            let keys = endpoint.pathKeys
            for parameter in endpoint.parameters {
                let required = parameter.isRequired || keys.contains(parameter.name)
                let place =
                    keys.contains(parameter.name) ? " (path)"
                    : parameter.name == endpoint.body ? " (the request body)"
                    : parameter.name == endpoint.mediaTypeParameter ? " (the body's Content-Type)" : ""
                let name = Self.escape(parameter.name) + place
                let defaultText = parameter.defaultValue.map { Self.escape(JSONValue($0).text(pretty: false)) } ?? ""
                let allowed = parameter.allowedValues.map { values in
                    values.map { Self.escape(JSONValue($0).text(pretty: false)) }.joined(separator: ", ")
                } ?? Self.escape(parameter.limits.summary ?? "")
                html += "<tr><td class=\"\(required ? "required" : "")\"><code>\(name)</code></td>"
                html += "<td class=\"type\">\(Self.escape(parameter.type.description))</td>"
                html += "<td>\(required ? "yes" : "no")</td><td><code>\(defaultText)</code></td><td><code>\(allowed)</code></td>"
                html += "<td>\(Self.escape(parameter.summary ?? ""))</td></tr>\n"
            }
            html += "</table>\n"
        }
        html += "<p>Result: \(self.resultText(endpoint))</p>\n"
        if !endpoint.details.isEmpty {
            html += "<p>Details (<code>\(Self.escape(endpoint.detailsParameter ?? "details"))</code>, any combination; "
            html += "a dotted path selects a detail's own, with its parent):</p>\n"
            html += self.detailList(endpoint.details, prefix: "")
        }
        return html
    }

    /// A list item per detail, by its path: the fields of its array's objects, its own details
    /// nested below it.
    private func detailList(_ details: [EndpointDetail], prefix: String) -> String {
        var html = "<ul>\n"
        for detail in details {
            let path = prefix + detail.name
            html += "<li><code>\(Self.escape(path))</code>: an array of <code>{\(Self.escape(detail.labels.joined(separator: ", ")))}</code>"
            if let summary = detail.summary { html += " — \(Self.escape(summary))" }
            if !detail.details.isEmpty { html += "\n" + self.detailList(detail.details, prefix: path + String(EndpointDetail.pathSeparator)) }
            html += "</li>\n"
        }
        return html + "</ul>\n"
    }

    private func resultText(_ endpoint: Endpoint) -> String {
        var fields = endpoint.labels.joined(separator: ", ")
        if !endpoint.labelsComplete { fields += fields.isEmpty ? "…" : ", …" }
        let object = "<code>{\(Self.escape(fields))}</code>"
        switch endpoint.result {
        case .rows:
            var text = "an array of \(object), streamed"
            if let limit = endpoint.rowLimit {
                text += " (at most \(limit) rows; <code>Spout-Truncated: true</code> says when the limit cut it)"
            }
            if endpoint.versionSQL != nil { text += ", with a weak <code>ETag</code> (<code>If-None-Match</code> answers 304)" }
            if let page = endpoint.page {
                text +=
                    ". In pages with <code>pageSize</code> (1 to \(page.maxSize)): one page, ordered by "
                    + "<code>\(Self.escape(page.key.joined(separator: ", ")))</code>, with an <code>ETag</code> and "
                    + "<code>Link: &lt;…&gt;; rel=\"next\"</code> to the next page (none on the last)"
            }
            if let cache = endpoint.cache { text += "; <code>Cache-Control: \(cache.headerValue)</code>" }
            return text
        case .object:
            let streamedTag = endpoint.versionSQL != nil ? "with a weak one" : "without it"
            let streams = EndpointDetail.depth(of: endpoint.details) > 1 ? " (streamed, \(streamedTag), when details of details are selected)" : ""
            return "one object \(object) with an <code>ETag</code>\(streams); 404 when there is none"
        case .scalar: return "one value with an <code>ETag</code>; 404 when there is none"
        case .bytes:
            return "the stored bytes as <code>\(Self.escape(endpoint.mediaType ?? ""))</code>, with an <code>ETag</code>; 404 when there are none"
        case .none: return "204 No Content; 404 when nothing was changed"
        case .created:
            let location = Self.escape(endpoint.location ?? "")
            return endpoint.labels.isEmpty && endpoint.labelsComplete
                ? "201 Created with <code>Location: \(location)</code>"
                : "201 Created with <code>Location: \(location)</code> and the new row \(object)"
        }
    }

    static func escape(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&#39;"
            default: output.append(character)
            }
        }
        return output
    }
}
