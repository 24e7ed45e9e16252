// Apple platforms only: swift-corelibs-foundation (Linux) has no `URLSession.bytes(for:)`.
// This file is NOT compiled by the Linux CI that checks this package (docs/client.md says
// what was and was not run).
#if canImport(Darwin)
import Foundation
import HTTPTypes
import Security

/// The default ``SpoutTransport`` on Apple platforms: `URLSession`, so requests follow the
/// system's proxy settings, cellular and Wi-Fi policies, App Transport Security (TLS, and
/// certificate pinning through `NSPinnedDomains` in Info.plist) and HTTP/2 when the server
/// offers it.
///
/// - Bodies stream through `URLSession.bytes(for:)`; a chunk is handed over at 4 KiB or at a
///   line end (JSON Lines), whichever comes first, so memory stays bounded by one row plus
///   one chunk.
/// - `URLSession` pools connections and decodes gzip, deflate and br bodies itself: the client
///   sees decoded bytes, and its cache stores them.
/// - Its own HTTP cache is bypassed (`reloadIgnoringLocalCacheData`): ``SpoutClient``'s
///   ETag cache decides.
/// - ``SpoutTLSConfiguration/additionalTrustRootsPEM`` is honoured through the session
///   delegate (the chain is evaluated against those roots, plus the system's unless
///   ``SpoutTLSConfiguration/usesSystemTrustRoots`` is false). ``SpoutTLSConfiguration/pinnedKeys``
///   is not: pin with `NSPinnedDomains` (ATS) instead; a configuration with pins throws
///   ``SpoutClientError/invalidConfiguration(_:)`` rather than silently not pinning.
public final class URLSessionTransport: SpoutTransport {
    private let session: URLSession
    private let tlsProblem: SpoutClientError?

    /// - Parameters:
    ///   - configuration: the session's configuration (`.default` unless given; pass a
    ///     background-capable or ephemeral one as the app needs).
    ///   - tls: extra trust roots for a private CA (pins go in Info.plist, see above).
    public init(configuration: URLSessionConfiguration = .default, tls: SpoutTLSConfiguration = SpoutTLSConfiguration()) {
        let configuration = configuration.copy() as? URLSessionConfiguration ?? configuration
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        var problem: SpoutClientError?
        var roots: [SecCertificate] = []
        do {
            roots = try Self.certificates(fromPEM: tls.additionalTrustRootsPEM)
        } catch let error as SpoutClientError {
            problem = error
        } catch {
            problem = .invalidConfiguration(String(describing: error))
        }
        if !tls.pinnedKeys.isEmpty {
            problem = .invalidConfiguration("URLSessionTransport pins through App Transport Security (NSPinnedDomains), not pinnedKeys")
        }
        self.tlsProblem = problem
        let delegate = roots.isEmpty && tls.usesSystemTrustRoots ? nil : TrustDelegate(roots: roots, onlyThese: !tls.usesSystemTrustRoots)
        self.session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    deinit {
        self.session.finishTasksAndInvalidate()
    }

    public func perform(_ request: TransportRequest) async throws -> TransportResponse {
        if let tlsProblem { throw tlsProblem }
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        for field in request.headers { urlRequest.addValue(field.value, forHTTPHeaderField: field.name.rawName) }
        if let stream = request.bodyStream {
            // URLSession takes a streamed body only as an InputStream; this transport gathers
            // it first (docs/client.md: on Apple platforms a bulk write's body is held whole).
            var gathered = Data()
            for try await bytes in stream { gathered.append(contentsOf: bytes) }
            urlRequest.httpBody = gathered
        } else if let body = request.body {
            urlRequest.httpBody = Data(body)
        }
        let bytes: URLSession.AsyncBytes
        let response: URLResponse
        do {
            (bytes, response) = try await self.session.bytes(for: urlRequest)
        } catch let error as URLError {
            try Task.checkCancellation()
            throw Self.clientError(error, receivedHead: false)
        }
        guard let http = response as? HTTPURLResponse else {
            bytes.task.cancel()
            throw SpoutClientError.connectionFailed("\(request.url.absoluteString): not an HTTP response")
        }
        var fields = HTTPFields()
        for (name, value) in http.allHeaderFields {
            guard let name = name as? String, let fieldName = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: fieldName, value: "\(value)"))
        }
        return TransportResponse(status: http.statusCode, headers: fields, body: URLSessionResponseBody(bytes))
    }

    /// A `URLError` as the client reports it.
    static func clientError(_ error: URLError, receivedHead: Bool) -> SpoutClientError {
        switch error.code {
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid,
            .serverCertificateHasUnknownRoot, .secureConnectionFailed, .appTransportSecurityRequiresSecureConnection:
            return .certificateRejected(error.localizedDescription)
        case .timedOut:
            return .timedOut(error.localizedDescription)
        default:
            return receivedHead ? .truncatedBody : .connectionFailed(error.localizedDescription)
        }
    }

    /// The certificates of PEM texts (every `BEGIN CERTIFICATE` block).
    static func certificates(fromPEM texts: [String]) throws -> [SecCertificate] {
        var certificates: [SecCertificate] = []
        for text in texts {
            let blocks = text.components(separatedBy: "-----BEGIN CERTIFICATE-----").dropFirst()
            for block in blocks {
                let base64 = block.components(separatedBy: "-----END CERTIFICATE-----")[0]
                    .components(separatedBy: .whitespacesAndNewlines).joined()
                guard let der = Data(base64Encoded: base64), let certificate = SecCertificateCreateWithData(nil, der as CFData) else {
                    throw SpoutClientError.invalidConfiguration("an additional trust root is not a PEM certificate")
                }
                certificates.append(certificate)
            }
        }
        return certificates
    }
}

/// Evaluates server trust against extra roots (a private CA).
///
/// `@unchecked Sendable`: its stored properties are immutable after init (`let`), and
/// `SecCertificate` values are immutable Core Foundation objects that Security allows to be
/// used from any thread.
private final class TrustDelegate: NSObject, URLSessionDelegate, @unchecked Sendable {
    private let roots: [SecCertificate]
    private let onlyThese: Bool

    init(roots: [SecCertificate], onlyThese: Bool) {
        self.roots = roots
        self.onlyThese = onlyThese
    }

    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
            let trust = challenge.protectionSpace.serverTrust
        else { return (.performDefaultHandling, nil) }
        SecTrustSetAnchorCertificates(trust, self.roots as CFArray)
        SecTrustSetAnchorCertificatesOnly(trust, self.onlyThese)
        var error: CFError?
        guard SecTrustEvaluateWithError(trust, &error) else { return (.cancelAuthenticationChallenge, nil) }
        return (.useCredential, URLCredential(trust: trust))
    }
}

/// A `URLSession.AsyncBytes` body, handed over in chunks of at most 4 KiB that end early at a
/// line feed.
///
/// `@unchecked Sendable`: the ``ResponseBodyReader`` contract gives a body one consumer, whose
/// calls (``nextChunk()``, then ``close()`` or the release) never overlap; `iterator` and
/// `ended` are only touched by those calls, so no two threads use them at once.
final class URLSessionResponseBody: ResponseBodyReader, @unchecked Sendable {
    static let chunkSize = 4096
    private let task: URLSessionDataTask
    private var iterator: URLSession.AsyncBytes.AsyncIterator
    private var ended = false

    init(_ bytes: URLSession.AsyncBytes) {
        self.task = bytes.task
        self.iterator = bytes.makeAsyncIterator()
    }

    deinit {
        if !self.ended { self.task.cancel() }
    }

    func nextChunk() async throws -> [UInt8]? {
        guard !self.ended else { return nil }
        var chunk: [UInt8] = []
        chunk.reserveCapacity(Self.chunkSize)
        do {
            while chunk.count < Self.chunkSize, let byte = try await self.iterator.next() {
                chunk.append(byte)
                if byte == UInt8(ascii: "\n") { break }
            }
        } catch let error as URLError {
            self.ended = true
            try Task.checkCancellation()
            throw URLSessionTransport.clientError(error, receivedHead: true)
        }
        if chunk.isEmpty {
            self.ended = true
            return nil
        }
        return chunk
    }

    func close() {
        if !self.ended {
            self.ended = true
            self.task.cancel()
        }
    }
}
#endif
