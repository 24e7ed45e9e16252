import Crypto
import HTTPTypes
import SpoutCore
import SpoutHTTP

/// A write's `Idempotency-Key` (the IETF draft's request header) and what it is kept under.
///
/// Contract:
/// - The key is 1 to 255 visible ASCII characters, as a Structured Field string (`"…"`) or
///   bare; anything else is a 400 naming the header, before any SQL runs.
/// - ``scope`` is the endpoint and who asks (the token's subject, or `anonymous`): a key of one
///   caller is never another's, so nobody can replay someone else's answer.
/// - ``requestHash`` digests what the request asks (method, path, query, media type and body,
///   SHA-256): the same key with another request is refused (422), never replayed.
struct IdempotencyKey: Sendable, Hashable {
    static let field = HTTPField.Name("Idempotency-Key")!
    /// Marks a replayed answer.
    static let replayedField = HTTPField.Name("Idempotent-Replayed")!

    var key: String
    var scope: String
    var requestHash: String

    /// The request's key, nil when it sends none.
    init?(_ request: Request, endpoint: String, subject: String?) throws {
        guard var value = request.headers[values: Self.field].first else { return nil }
        guard request.headers[values: Self.field].count == 1 else {
            throw HTTPError(status: .badRequest, message: "a request carries one Idempotency-Key, not several")
        }
        if value.hasPrefix("\""), value.hasSuffix("\""), value.utf8.count >= 2 { value = String(value.dropFirst().dropLast()) }
        guard (1...255).contains(value.utf8.count), value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw HTTPError(status: .badRequest, message: "Idempotency-Key must be 1 to 255 visible ASCII characters")
        }
        self.key = value
        self.scope = endpoint + " " + (subject ?? "anonymous")
        var digest = Self.digest(ofHead: request)
        digest.update(data: request.body)
        self.requestHash = KeyTable.hex(Array(digest.finalize()))
    }

    /// The digest of what `request` asks before its body: method, path, query and media type.
    /// ``requestHash`` is this digest updated with the body.
    static func digest(ofHead request: Request) -> SHA256 {
        var digest = SHA256()
        for part in [request.method.rawValue, request.path, request.queryString ?? "", request.headers[values: .contentType].first ?? ""] {
            digest.update(data: Array(part.utf8) + [0])
        }
        return digest
    }

    /// This key with the request's digest finished from `digest` (``digest(ofHead:)`` updated
    /// with a streamed body as it arrived).
    func digesting(_ digest: SHA256) -> IdempotencyKey {
        var key = self
        key.requestHash = KeyTable.hex(Array(digest.finalize()))
        return key
    }

    /// `response` as kept: its status, own fields (with its body's type) and body.
    static func stored(_ response: Response) -> StoredAnswer {
        var fields = response.headers.map { "\($0.name.rawName): \($0.value)" }
        var body: [UInt8] = []
        if case .bytes(let bytes, let contentType) = response.body {
            body = bytes
            fields.append("Content-Type: \(contentType)")
        }
        return StoredAnswer(status: response.status.code, fields: fields, body: body)
    }

    /// The answer kept, as the response a replay gets (marked `Idempotent-Replayed: true`).
    static func replay(_ answer: StoredAnswer) -> Response {
        var headers = HTTPFields()
        var contentType: String?
        for line in answer.fields {
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else { continue }
            let value = String(line[line.index(after: colon)...].drop { $0 == " " })
            if name == .contentType { contentType = value } else { headers.append(HTTPField(name: name, value: value)) }
        }
        headers.append(HTTPField(name: Self.replayedField, value: "true"))
        let status = HTTPResponse.Status(code: answer.status)
        guard let contentType else { return Response(status: status, headers: headers) }
        return Response(status: status, headers: headers, body: .bytes(answer.body, contentType: contentType))
    }
}

/// The same idempotency key with another request (422).
struct IdempotencyKeyReused: Error, HTTPResponseError {
    var status: HTTPResponse.Status { .unprocessableContent }
    var responseBody: [UInt8] {
        ErrorResponse(status: self.status, message: "Idempotency-Key already used for another request; send a new key for a new request").body
    }
}
