import HTTPTypes
import SpoutCore
import SpoutHTTP

/// A row response read whole, then sent (``RowResponder``, step 3).
extension RowResponder {
    private enum WholeAnswer: Sendable {
        case notModified(HTTPFields)
        case body(WholeRead, HTTPFields)
    }

    func sendWhole(
        _ rows: RowResult, status: HTTPResponse.Status, headers: HTTPFields, format: OutputFormat, observer: AcquireWait,
        spans: DatabaseSpans?
    ) async throws {
        let answer = try await rows.database.withSession(rows.work, observer: observer) { session -> WholeAnswer in
            var headers = headers
            if case .version(let version)? = rows.validator,
                let tag = try await self.versionTag(version, format: format, session: session, spans: spans)
            {
                headers.replaceOrAdd(.eTag, tag.description)
                if tag.isMatched(byIfNoneMatch: self.exchange.ifNoneMatch) { return .notModified(headers) }
            }
            return .body(try await self.readWhole(rows, format: format, session: session, spans: spans), headers)
        }
        // The connection is back in its pool by now.
        switch answer {
        case .notModified(let headers):
            self.exchange.sendNotModified(headers)
        case .body(let whole, var headers):
            var storedType: String?
            if rows.mediaTypeColumn != nil {
                let type = self.storedMediaType(whole.outcome.lastKey.first, declared: format.contentType)
                let essence = MediaType.essence(of: type)
                guard ContentNegotiation.format(accept: self.exchange.acceptHeader, offering: [(essence, format)]) != nil else {
                    throw HTTPError(status: .notAcceptable, message: "not acceptable: this resource is \(essence)")
                }
                headers.replaceOrAdd(.contentType, type)
                storedType = type
            }
            if case .body? = rows.validator {
                let tag = storedType.map { EntityTag.strong(digesting: [Array($0.utf8), whole.body]) } ?? EntityTag.strong(body: whole.body)
                headers.replaceOrAdd(.eTag, tag.description)
                if tag.isMatched(byIfNoneMatch: self.exchange.ifNoneMatch) { return self.exchange.sendNotModified(headers) }
            }
            if let next = try rows.nextPage?(whole.outcome) { headers.append(HTTPField(name: .webLink, value: "<\(next)>; rel=\"next\"")) }
            if rows.stream.rowLimit != nil && rows.nextPage == nil {
                headers.replaceOrAdd(.spoutTruncated, String(whole.outcome.truncated))
            }
            if self.exchange.timingHeader {
                let parts = [("acquire", observer.acquire), ("db", whole.database)] + (whole.encode.map { [("encode", $0)] } ?? [])
                headers.append(HTTPField(name: .serverTiming, value: ServerTiming.header(parts)))
            }
            self.exchange.send(status: status, headers: headers, body: whole.body, rows: whole.outcome.rows)
        }
    }

    /// The `Content-Type` of a stored file whose row holds its type (``RowResult/mediaTypeColumn``):
    /// the stored text when it is a media type within `declared` (the endpoint's range), the
    /// declared type itself when the row holds none and it is one type, and
    /// `application/octet-stream` otherwise, so a stored type can never make a browser run what
    /// the endpoint did not mean to serve (logged).
    private func storedMediaType(_ value: SQLValue?, declared: String) -> String {
        let fallback = declared.contains("*") ? "application/octet-stream" : declared
        guard case .text(let stored)? = value, !stored.isEmpty else { return fallback }
        if EndpointFileParser.isMediaType(stored), MediaType.isWithin(stored, range: declared) { return stored }
        self.exchange.logger.warning(
            "a stored media type is not within the endpoint's mediaType; sent as application/octet-stream",
            metadata: ["request.id": "\(self.exchange.request.id)", "stored": "\(stored)", "mediaType": "\(declared)"])
        return "application/octet-stream"
    }

    /// Reads `rows` whole, the driver's own way when it has one
    /// (``SpoutCore/DatabaseSession/readWhole(_:shape:format:roundTrips:)``). A client that goes
    /// away cancels the task, which cancels the statement.
    private func readWhole(_ rows: RowResult, format: OutputFormat, session: DatabaseSession, spans: DatabaseSpans?) async throws -> WholeRead {
        let started = ContinuousClock.now
        // Round trips are noted only for a request whose spans record.
        let log = spans.map { _ in RoundTripLog() }
        do {
            let read = try await session.readWhole(rows.stream, shape: rows.shape, format: format, roundTrips: log)
            if let spans, let log { spans.recordWholeRead(log, from: started, .success(read)) }
            return read
        } catch {
            if let spans, let log { spans.recordWholeRead(log, from: started, .failure(error)) }
            throw error
        }
    }
}
