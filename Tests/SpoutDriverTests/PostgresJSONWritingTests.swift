import SpoutCore
import SpoutTestDatabases
import SpoutTestSupport
import Testing

@testable import SpoutPostgres

/// PostgreSQL's cursors write JSON straight from libpq's text (``JSONWritingCursor``): for
/// every type Spout maps, NULLs, odd values and both date formats, the bytes are exactly those
/// of `JSONText.writeValue(value(at:))`, through a server-side cursor (streams) and in
/// single-row mode.
@Suite(.serialized, .enabled(if: TestDatabases.postgresEnabled))
struct PostgresJSONWritingTests {
    static let sql = """
        SELECT * FROM (VALUES
          (1::int2, 2::int4, '-9223372036854775808'::int8, true, 'plain'::text, 'quote " back \\ tab \t nl
        ctl ' || chr(1) || ' é 名前 😀'::varchar, 'pad'::char(5), 'nm'::name,
           DATE '2024-02-29', DATE 'infinity', DATE '0044-03-15 BC', TIMESTAMP '2024-02-29 12:34:56.789',
           TIMESTAMPTZ '1969-12-31 23:59:59.999999+00', 12345.678900::numeric, 1.5::float8, 'NaN'::float8,
           '{"a": [1, "x"]}'::json, '{"b": 2}'::jsonb, '\\xdeadbeef'::bytea, '12:30'::time,
           'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, ARRAY[1, NULL, 3]::int4[], ARRAY['x', 'y"z']::text[]),
          (NULL, NULL, 0, false, '', NULL, NULL, NULL, NULL, DATE '-infinity', NULL, NULL, NULL, NULL, NULL, '-Infinity'::float8,
           NULL, NULL, ''::bytea, NULL, NULL, ARRAY[]::int4[], NULL)
        ) AS v
        """

    /// Every value of every row: (the cursor's own JSON, the JSON of its value); and every
    /// row the cursor writes whole (`writeJSONObject`) is the object of its values written one
    /// by one.
    static func bothWays(_ cursor: any RowCursor, dateFormat: DateFormat) throws -> [(String, String)] {
        let writer = try #require(cursor as? any JSONWritingCursor, "the cursor writes no JSON itself")
        let labels = cursor.columns.map(\.label)
        let layout = try #require(CompactObjectLayout(keys: labels))
        var pairs: [(String, String)] = []
        while try cursor.next() {
            let whole = CollectingSink()
            var wholeOut = ChunkedOutput(sink: whole)
            writer.writeJSONObject(layout, dateFormat: dateFormat, to: &wholeOut)
            try wholeOut.finish()
            let first = pairs.count
            defer {
                let values = pairs[first...].map(\.0)
                let object = "{" + zip(labels, values).map { "\"\($0)\":\($1)" }.joined(separator: ",") + "}"
                #expect(String(decoding: whole.bytes, as: UTF8.self) == object)
            }
            for index in cursor.columns.indices {
                let direct = CollectingSink()
                var out = ChunkedOutput(sink: direct)
                writer.writeJSON(at: index, dateFormat: dateFormat, to: &out)
                try out.finish()
                let viaValue = CollectingSink()
                var other = ChunkedOutput(sink: viaValue)
                JSONText.writeValue(cursor.value(at: index), dateFormat: dateFormat, to: &other)
                try other.finish()
                pairs.append((String(decoding: direct.bytes, as: UTF8.self), String(decoding: viaValue.bytes, as: UTF8.self)))
            }
        }
        return pairs
    }

    @Test(arguments: [DateFormat.epochMilliseconds, .iso8601])
    func directJSONIsTheValuesJSON(dateFormat: DateFormat) throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        let parsed = try ParsedSQL(Self.sql, dialect: .postgres)
        try connection.begin(readOnly: true)
        let streamed = try Self.bothWays(try connection.query(parsed, [], options: QueryOptions(interleaved: true)), dateFormat: dateFormat)
        try connection.commit()
        let single = try Self.bothWays(try connection.query(parsed, [], options: QueryOptions()), dateFormat: dateFormat)
        for pairs in [streamed, single] {
            #expect(pairs.count == 46)
            for (direct, viaValue) in pairs {
                #expect(direct == viaValue)
            }
        }
        // Off a row (the cursor ended), a whole row is nulls, as each value would be.
        let ended = try connection.query(try ParsedSQL("SELECT 1 AS a, 'x'::text AS b", dialect: .postgres), [], options: QueryOptions())
        while try ended.next() {}
        let sink = CollectingSink()
        var out = ChunkedOutput(sink: sink)
        try #require(ended as? any JSONWritingCursor).writeJSONObject(try #require(CompactObjectLayout(keys: ["a", "b"])), dateFormat: dateFormat, to: &out)
        try out.finish()
        #expect(String(decoding: sink.bytes, as: UTF8.self) == #"{"a":null,"b":null}"#)
        ended.close()
        // The direct path did write what matters: text escaped, integers, dates.
        #expect(streamed.map(\.0).contains(#""quote \" back \\ tab \t nl\nctl \u0001 é 名前 😀""#))
        #expect(streamed.map(\.0).contains("-9223372036854775808"))
    }

    /// Every type a server cursor reads in binary (``PostgresBinaryColumn``), with NULLs, the
    /// extremes, `infinity`, BC dates and years past 9999, the ends of a timestamp's range, and
    /// the doubles whose text is the hardest to read back.
    static let binarySQL = """
        SELECT * FROM (VALUES
          (1::int2, 2::int4, '-9223372036854775808'::int8, true, 'plain'::text, 'quote " back \\ tab \t nl
        ctl ' || chr(1) || ' é 名前 😀'::varchar, 'pad'::char(5), 'nm'::name, DATE '2024-02-29',
           TIMESTAMP '2024-02-29 12:34:56.789', TIMESTAMPTZ '1969-12-31 23:59:59.999999+00', 1.5::float8),
          ('-32768'::int2, 2147483647, 9223372036854775807, false, '', NULL, NULL, NULL, DATE 'infinity',
           TIMESTAMP 'infinity', TIMESTAMPTZ '-infinity', 'NaN'::float8),
          (NULL, NULL, NULL, NULL, NULL, 'x', 'y', 'z', DATE '-infinity', NULL, NULL, NULL),
          (0, '-2147483648'::int4, 0, true, 'a', 'b', 'c', 'd', DATE '0044-03-15 BC',
           TIMESTAMP '0044-03-15 10:00:00 BC', TIMESTAMPTZ '2024-06-01 12:00:00+02', 0.1::float8),
          (32767, -1, -1, false, 'e', 'f', 'g', 'h', DATE '10000-01-01',
           TIMESTAMP '10000-01-01 00:00:00.000001', TIMESTAMPTZ '294276-12-31 23:59:59.999999+00', '-0'::float8),
          (8, 9, 10, NULL, 'i', 'j', 'k', 'l', DATE '1970-01-01',
           TIMESTAMP '1970-01-01 00:00:00', TIMESTAMPTZ '4713-01-01 00:00:00+00 BC', '1e300'::float8),
          (11, 12, 13, true, 'm', 'n', 'o', 'p', DATE '2000-01-01',
           TIMESTAMP '2000-01-01 00:00:00', TIMESTAMPTZ '2000-01-01 00:00:00.5+00', '4.9e-324'::float8),
          (14, 15, 16, false, 'q', 'r', 's', 't', DATE '1999-12-31',
           TIMESTAMP '1999-12-31 23:59:59.999999', TIMESTAMPTZ 'epoch', '-Infinity'::float8)
        ) AS v(a, b, c, d, e, f, g, h, i, j, k, l)
        """

    /// A stream's batches after the first come in binary when every column has a binary form:
    /// each value reads and writes exactly as in the text of a stream read in one batch.
    @Test(arguments: [DateFormat.epochMilliseconds, .iso8601], [false, true])
    func binaryBatchesReadAsTheirText(dateFormat: DateFormat, prefetch: Bool) throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        let parsed = try ParsedSQL(Self.binarySQL, dialect: .postgres)
        try connection.begin(readOnly: true)
        // One row per batch: every row after the first comes in a binary batch.
        let binary = try connection.query(parsed, [], options: QueryOptions(interleaved: true, batchSize: 1, prefetch: prefetch))
        let server = try #require(binary as? PostgresServerCursor)
        #expect(!server.batchIsBinary)
        let binaryPairs = try Self.bothWays(binary, dateFormat: dateFormat)
        #expect(server.batchIsBinary)
        let text = try connection.query(parsed, [], options: QueryOptions(interleaved: true, batchSize: 1_000, prefetch: prefetch))
        let textPairs = try Self.bothWays(text, dateFormat: dateFormat)
        #expect(try #require(text as? PostgresServerCursor).batchIsBinary == false)
        try connection.commit()

        #expect(binaryPairs.count == 8 * 12)
        #expect(binaryPairs.map(\.0) == textPairs.map(\.0))
        #expect(binaryPairs.map(\.1) == textPairs.map(\.1))
        for (direct, viaValue) in binaryPairs {
            #expect(direct == viaValue)
        }
        #expect(binaryPairs.map(\.0).contains("9223372036854775807"))
        #expect(binaryPairs.map(\.0).contains(#""pad  ""#))
    }

    /// One column without a binary form Spout reads keeps every batch in text.
    @Test func aColumnReadAsTextKeepsTheBatchesText() throws {
        let connection = try PostgresTestEnvironment.connect()
        defer { connection.close() }
        let parsed = try ParsedSQL("SELECT g, g::numeric / 4 AS q FROM generate_series(1, 5) g", dialect: .postgres)
        try connection.begin(readOnly: true)
        let cursor = try connection.query(parsed, [], options: QueryOptions(interleaved: true, batchSize: 2))
        let server = try #require(cursor as? PostgresServerCursor)
        var quarters: [SQLValue] = []
        while try cursor.next() {
            #expect(!server.batchIsBinary)
            quarters.append(cursor.value(at: 1))
        }
        #expect(quarters == ["0.25000000000000000000", "0.50000000000000000000", "0.75000000000000000000", "1.00000000000000000000", "1.2500000000000000"].map { SQLValue.decimal($0) })
        try connection.commit()
    }
}
