/// What a compact JSON object of plain columns writes around its values: `{"a":` before the
/// first, `,"b":` before each next one, `}` after the last. Made once per column list with its
/// ``ObjectPlan`` (``ObjectPlan/compactLayout``), and walked by ``write(to:value:)``: the one
/// place that lays such an object out, for the encoder and for the cursors that write a row's
/// values in one call (``JSONWritingCursor/writeJSONObject(_:dateFormat:to:)``).
public struct CompactObjectLayout: Sendable {
    /// The prefixes one after the other; the `i`th ends at `ends[i]`.
    @usableFromInline let prefixes: [UInt8]
    @usableFromInline let ends: [Int]

    /// The number of values the object holds.
    public var count: Int { self.ends.count }

    /// The layout of an object with `keys`, in order (escaped as JSON strings); nil for none.
    public init?(keys: [String]) {
        self.init(encodedKeys: keys.map(ObjectPlan.encodedKey))
    }

    /// The layout of `keys`, each already `"key"` (escaped), in order; nil for none.
    init?(encodedKeys keys: [[UInt8]]) {
        guard !keys.isEmpty else { return nil }
        var prefixes: [UInt8] = []
        var ends: [Int] = []
        ends.reserveCapacity(keys.count)
        for (position, key) in keys.enumerated() {
            prefixes.append(position == 0 ? UInt8(ascii: "{") : UInt8(ascii: ","))
            prefixes.append(contentsOf: key)
            prefixes.append(UInt8(ascii: ":"))
            ends.append(prefixes.count)
        }
        self.prefixes = prefixes
        self.ends = ends
    }

    /// Writes the object: each prefix, then value `column` as `value(column, &out)` writes it,
    /// for every column in order; then `}`.
    @inlinable
    public func write(to out: inout ChunkedOutput, value: (_ column: Int, _ out: inout ChunkedOutput) -> Void) {
        self.prefixes.withUnsafeBufferPointer { prefixes in
            var start = 0
            for column in 0..<self.ends.count {
                let end = self.ends[column]
                out.append(prefixes.baseAddress! + start, count: end - start)
                value(column, &out)
                start = end
            }
        }
        out.append(UInt8(ascii: "}"))
    }
}
