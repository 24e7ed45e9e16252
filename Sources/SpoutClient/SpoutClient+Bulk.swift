import Foundation
import HTTPTypes

extension SpoutClient {
    /// A bulk write (`POST <path>/bulk` of an endpoint declared `bulk: true`): each record of
    /// `records` encoded as one line of JSON Lines and sent as the sequence yields it, all
    /// applied in one transaction, or none.
    ///
    /// ```swift
    /// let result = try await client.bulk("/events", records: events)   // any AsyncSequence of Encodables
    /// print(result.records, result.changed)
    /// ```
    ///
    /// - The body streams: a record is encoded when the sequence yields it and sent as the
    ///   connection takes it; at most ``SpoutBodyStream/limit`` bytes wait, so the sequence
    ///   is read no faster than the network carries it, and the body is never held whole
    ///   (except by ``URLSessionTransport``, which gathers it first).
    /// - A record the server refuses throws ``SpoutBulkRecordError`` with its position in the
    ///   sequence and the parameter at fault; any other error status throws
    ///   ``SpoutClientError/server(_:)``. Either way nothing was committed. The server answers
    ///   a refused record at once: the rest of the sequence is not read.
    /// - An error the sequence or the encoder throws ends the body short, so the server commits
    ///   nothing, and is thrown as it is.
    /// - Sent again with the same `idempotencyKey` after a lost answer, the write is applied
    ///   once: the second answer is the first (``SpoutBulkResult/isReplayed``).
    /// - The token is the provider's current one: a `401` cannot be sent again with a renewed
    ///   token (the records are gone), it throws.
    ///
    /// - Parameters:
    ///   - path: the endpoint's path (`/events`); `/bulk` is appended.
    ///   - encoder: encodes each record (on one line: not `.prettyPrinted`); by default keys
    ///     sorted (the same records make the same body: a replay's must) and dates as ISO 8601
    ///     timestamps (send a `DATE` parameter as a `"YYYY-MM-DD"` string).
    public func bulk<Records: AsyncSequence>(
        _ path: String, records: Records, query: [URLQueryItem] = [], idempotencyKey: String? = nil, encoder: JSONEncoder? = nil
    ) async throws -> SpoutBulkResult where Records.Element: Encodable {
        let url = try RequestTarget.url(base: self.baseURL, path: path + "/bulk", query: query)
        let encoder = encoder ?? Self.bulkEncoder()
        guard !encoder.outputFormatting.contains(.prettyPrinted) else {
            throw SpoutClientError.invalidConfiguration("a bulk write sends one record a line: its encoder must not be .prettyPrinted")
        }
        var headers = try await self.headers(renewingToken: false)
        headers[.accept] = "application/json"
        headers[.contentType] = "application/x-ndjson"
        if let idempotencyKey { headers[.idempotencyKey] = idempotencyKey }
        let body = SpoutBodyStream()
        let request = TransportRequest(method: .post, url: url, headers: headers, bodyStream: body)
        let transport = self.transport
        let response = try await withThrowingTaskGroup(of: TransportResponse.self) { group in
            group.addTask {
                do {
                    let response = try await transport.perform(request)
                    // An answer before the body's end (a refused record): read no more records.
                    if response.status >= 300 { body.cancel() }
                    return response
                } catch {
                    body.cancel()
                    throw error
                }
            }
            do {
                for try await record in records {
                    var line = [UInt8](try encoder.encode(record))
                    line.append(UInt8(ascii: "\n"))
                    guard await body.write(line) else { break }
                }
                body.finish()
            } catch {
                // Cut short, the body commits nothing; the transport's failure is this one's echo.
                body.finish(throwing: error)
                group.cancelAll()
                _ = try? await group.next()
                throw error
            }
            return try await group.next()!
        }
        guard response.status < 400 else { throw await ErrorBodyDecoder.bulkError(from: response) }
        let bytes = try await Self.readWhole(Exchange(url: url, status: response.status, headers: response.headers, body: response.body, source: .network))
        return try SpoutBulkResult(headers: response.headers, body: Data(bytes), dateFormat: self.configuration.dateFormat)
    }

    /// One record a line; dates as ISO 8601 timestamps; keys sorted, so that the same records
    /// make the same body, which a replay under the same `Idempotency-Key` must send.
    static func bulkEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}

/// The answer to a bulk write: `{"records":N,"changed":M}`, and for an endpoint that answers
/// rows, `"keys"`: the rows its statements returned (an `INSERT … RETURNING`'s), in record order.
public struct SpoutBulkResult: Sendable {
    /// The records applied.
    public var records: Int
    /// The rows their statements changed.
    public var changed: Int
    /// Whether the answer carries keys (``keys(_:)``).
    public var hasKeys: Bool
    public var headers: HTTPFields
    /// The whole answer, as sent.
    public var body: Data
    let dateFormat: SpoutDateFormat

    private struct Counts: Decodable {
        var records: Int
        var changed: Int
        var keys: Skipped?
    }

    /// Any JSON value, read and dropped.
    private struct Skipped: Decodable {
        init(from decoder: any Decoder) throws {}
    }

    private struct Keys<Key: Decodable>: Decodable {
        var keys: [Key]?
    }

    init(headers: HTTPFields, body: Data, dateFormat: SpoutDateFormat) throws {
        let counts: Counts
        do {
            counts = try JSONDecoder().decode(Counts.self, from: body)
        } catch {
            throw SpoutClientError.malformedBody("not a bulk write's answer: \(error)")
        }
        self.records = counts.records
        self.changed = counts.changed
        self.hasKeys = counts.keys != nil
        self.headers = headers
        self.body = body
        self.dateFormat = dateFormat
    }

    /// Whether the server answered a replay of an earlier request under the same
    /// `Idempotency-Key` (`Idempotent-Replayed: true`): nothing was applied this time.
    public var isReplayed: Bool { self.headers[HTTPField.Name("Idempotent-Replayed")!] == "true" }

    /// The keys made, one a record for a statement that makes one row, decoded as `type`
    /// (dates as the client is configured); empty when the answer has none.
    public func keys<Key: Decodable>(_ type: Key.Type) throws -> [Key] {
        do {
            return try self.dateFormat.makeDecoder().decode(Keys<Key>.self, from: self.body).keys ?? []
        } catch {
            throw SpoutClientError.decoding(row: 0, String(describing: error))
        }
    }
}

/// A record of a bulk write that the server refused: an argument that does not convert or
/// check (`400`), a statement that changed nothing (`422`), a database error (`409`, `403`)
/// naming it. Nothing was committed.
public struct SpoutBulkRecordError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The record's position in the sequence sent, from 0.
    public var record: Int
    /// Its line in the body, from 1, as the server names it.
    public var line: Int
    /// The server's error: status, message, and the parameter and value at fault.
    public var error: SpoutServerError

    /// The parameter at fault, when the server names one.
    public var parameter: String? { self.error.parameter }

    public var description: String { "record \(self.record) (line \(self.line)): \(self.error)" }
}
