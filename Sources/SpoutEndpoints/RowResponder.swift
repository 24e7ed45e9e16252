import HTTPTypes
import SpoutCore
import SpoutHTTP

extension RowResult {
    public func produce(status: HTTPResponse.Status, headers: HTTPFields, through exchange: ResponseExchange) async throws {
        // A stream counts against its client's stream cap (429) before it waits for anything.
        if !self.isSentWhole { try exchange.admitStream() }
        do {
            try await RowResponder(exchange: exchange).respond(self, status: status, headers: headers)
        } catch {
            throw UnrepresentableText.naming(error, arguments: self.stream.arguments)
        }
    }
}

/// Decides how a row request is answered, and answers it: the one owner of that rule. The
/// database work itself (lease, threads, timeout, transaction, role, cancellation, replica
/// failover, release) is one ``SpoutCore/Database/withSession(_:observer:retryOnPrimary:_:)``
/// call per response.
///
/// In order:
/// 1. Negotiates the format (`Accept`; 406 when nothing offered is acceptable): JSON, JSON
///    Lines or CSV, or the one type of a stored file (``RowResult/format``), checked once the
///    row is read when the row holds its type (``RowResult/mediaTypeColumn``). A stored file
///    goes with `nosniff` and a sandboxing `Content-Security-Policy`.
/// 2. With a version validator, reads the version first: a match with `If-None-Match` is a
///    304 and the rows are not read. A version that cannot be read leaves the response
///    untagged (logged), unless its replica is gone (then the primary answers all of it).
/// 3. A result sent whole (single rows, unless their details have details of their own
///    (``RowResult/streamsSingleRow``); pages; body validators) is read into memory, the way
///    the driver decides (``SpoutCore/DatabaseSession/readWhole(_:shape:format:roundTrips:)``).
///    Its strong `ETag`, `Link` to the next page and `Spout-Truncated` header are
///    set from the body and how it ended, and it is sent once the connection is released.
/// 4. Anything else streams on the database's threads into the exchange's sink, on a lease
///    counted against the pool's stream limit (``DatabaseConfiguration/streamReserve``). The
///    sink spools what a slow client cannot take yet, so the lease is released when the
///    database has answered, not when the client has read; only when the spool may not grow
///    does it block the thread (backpressure). A client that goes away closes the sink, which
///    cancels the statement. A row limit is reported in a `Spout-Truncated` trailer. A replica
///    that fails before the stream produced a byte is replaced by the primary, into the same
///    sink.
struct RowResponder: Sendable {
    let exchange: ResponseExchange

    func respond(_ rows: RowResult, status: HTTPResponse.Status, headers original: HTTPFields) async throws {
        let format: OutputFormat
        if let only = rows.format, rows.mediaTypeColumn != nil {
            // The row holds the type: `Accept` is checked once it is read.
            format = only
        } else if let only = rows.format {
            let essence = MediaType.essence(of: only.contentType)
            guard ContentNegotiation.format(accept: self.exchange.acceptHeader, offering: [(essence, only)]) != nil else {
                throw HTTPError(status: .notAcceptable, message: "not acceptable: this resource is \(essence)")
            }
            format = only
        } else {
            guard let negotiated = ContentNegotiation.format(accept: self.exchange.acceptHeader) else {
                throw ContentNegotiation.notAcceptable
            }
            format = negotiated
        }
        var headers = original
        headers.replaceOrAdd(.contentType, format.contentType)
        if case .raw = format {
            // A stored file is shown as what it is, and never runs as part of this origin: an
            // uploaded SVG or HTML opened in a browser runs no script, whatever its type says.
            headers.replaceOrAdd(.xContentTypeOptions, "nosniff")
            headers.replaceOrAdd(.contentSecurityPolicy, "default-src 'none'; style-src 'unsafe-inline'; sandbox")
        }
        let spans = DatabaseSpans(self.exchange.request.span, database: rows.database)
        let observer = AcquireWait(spans: spans)
        if rows.isSentWhole {
            try await self.sendWhole(rows, status: status, headers: headers, format: format, observer: observer, spans: spans)
        } else {
            try await self.stream(rows, status: status, headers: headers, format: format, observer: observer, spans: spans)
        }
    }

    /// The weak tag of what `version` returns, or nil when it cannot be read (logged; the rows
    /// are still right without a validator). Throws only when the replica it ran on is gone.
    func versionTag(
        _ version: RowStream, format: OutputFormat, session: DatabaseSession, spans: DatabaseSpans?
    ) async throws -> EntityTag? {
        do {
            let read = {
                try await session.run { connection in
                    let value = CollectingSink()
                    do {
                        try version.write(as: .json(), shape: .scalar, to: value, on: connection, dateFormat: .epochMilliseconds)
                    } catch RowStreamError.noRow {
                        // No row is a version too (an empty table's).
                    }
                    return value.bytes
                }
            }
            let value = try await DatabaseSpans.measure(spans, "version", read)
            return EntityTag.weak(digesting: [Array(format.contentType.utf8), value])
        } catch where session.failsOver(error) {
            throw error
        } catch {
            self.exchange.logger.warning(
                "versionSql failed; answering without an ETag",
                metadata: ["request.id": "\(self.exchange.request.id)", "error": "\(String(reflecting: error))"])
            return nil
        }
    }
}
