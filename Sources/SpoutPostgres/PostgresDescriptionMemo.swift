import CLibPQ
import Glibc

/// The result descriptions a connection has made, found again by comparing what a result says
/// of its columns (their number, type OIDs and names) without allocating.
///
/// A connection runs the same few statements over and over, and describing a result makes a
/// string per column name and two arrays: a fifth of the allocations the database thread made
/// for a detail request. A description depends on nothing but those three facts, so one that
/// matches them is the description the result would get. Owned by one connection, so used by
/// one thread at a time, like the connection.
struct PostgresDescriptionMemo {
    private struct Entry {
        var oids: [Oid]
        var description: PostgresResultDescription
    }

    /// Descriptions kept; past this, the oldest is replaced.
    static let capacity = 32

    private var entries: [Entry] = []
    /// The entry the next new description replaces, once ``capacity`` are kept.
    private var nextReplaced = 0

    /// The description of `result`: a kept one whose columns match, else a new one, kept.
    mutating func description(of result: OpaquePointer) -> PostgresResultDescription {
        let count = Int(PQnfields(result))
        // By index: iterating the entries would copy (retain) each one's arrays.
        for position in self.entries.indices
        where self.entries[position].oids.count == count && Self.matches(self.entries[position], result) {
            return self.entries[position].description
        }
        let description = PostgresResultDescription(result)
        let entry = Entry(oids: (0..<Int32(count)).map { PQftype(result, $0) }, description: description)
        if self.entries.count < Self.capacity {
            self.entries.append(entry)
        } else {
            self.entries[self.nextReplaced] = entry
            self.nextReplaced = (self.nextReplaced + 1) % Self.capacity
        }
        return description
    }

    /// Whether `result`'s columns have `entry`'s types and names, in order (the counts are equal).
    private static func matches(_ entry: borrowing Entry, _ result: OpaquePointer) -> Bool {
        let typesMatch = entry.oids.withUnsafeBufferPointer { oids in
            (0..<oids.count).allSatisfy { PQftype(result, Int32($0)) == oids[$0] }
        }
        guard typesMatch else { return false }
        return entry.description.columns.withUnsafeBufferPointer { columns in
            (0..<columns.count).allSatisfy { index in
                guard let name = PQfname(result, Int32(index)) else { return false }
                return columns[index].label.withCString { strcmp($0, name) == 0 }
            }
        }
    }
}
