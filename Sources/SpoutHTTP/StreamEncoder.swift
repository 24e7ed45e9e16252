/// Compresses one body: a stream as its producer writes it, or (zstd) a body sent whole in
/// one ``finish(_:)`` (``ContentCoding/encodeWhole(_:)``).
///
/// Contract: one thread at a time calls ``encode(_:flush:)`` for each chunk and ``finish(_:)``
/// once; each returns the compressed bytes the library let go of so far (possibly none). After
/// an `encode` with `flush` (of any bytes, none included), the bytes returned so far decode to
/// every byte given so far; the ``CompressionStage`` flushes soon after it runs out of input,
/// so compression does not hold a row back while the producer waits for the database.
protocol StreamEncoder: AnyObject {
    func encode(_ bytes: [UInt8], flush: Bool) throws -> [UInt8]
    /// The last bytes and the coding's end (gzip's trailer, zstd's last block).
    func finish(_ bytes: [UInt8]) throws -> [UInt8]
}

/// Why an encoder failed (a library error; the stream is then cut short).
struct StreamEncoderFailure: Error, CustomStringConvertible {
    var description: String
}
