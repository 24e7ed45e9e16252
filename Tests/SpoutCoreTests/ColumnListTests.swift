@testable import SpoutCore
import Testing

/// Result column lists are compared on every request (the pipelined plan's foreseen parent,
/// the memos keyed by `ColumnListKey`) in place, without the array's element copies: the
/// comparison must still be exactly `==`.
@Suite struct ColumnListTests {
    private static func columns(_ labels: [String], type: ColumnType = .integer, databaseTypeName: String? = "int4") -> [Column] {
        labels.map { Column(label: $0, type: type, databaseTypeName: databaseTypeName) }
    }

    @Test func sameListIsArrayEquality() {
        let base = Self.columns(["employeeNumber", "a label longer than fifteen bytes", "x"])
        var rebuilt = Self.columns(["employeeNumber", "a label longer than fifteen bytes"])
        rebuilt.append(Column(label: "x", type: .integer, databaseTypeName: "int4"))
        let cases: [[Column]] = [
            base, rebuilt, [],
            Self.columns(["employeeNumber", "a label longer than fifteen bytes", "y"]),
            Self.columns(["employeeNumber", "a label longer than fifteen bytes"]),
            Self.columns(["employeeNumber", "a label longer than fifteen bytes", "x"], type: .text),
            Self.columns(["employeeNumber", "a label longer than fifteen bytes", "x"], databaseTypeName: "int8"),
            Self.columns(["employeeNumber", "a label longer than fifteen bytes", "x"], databaseTypeName: nil),
        ]
        for a in cases {
            for b in cases {
                #expect(Column.sameList(a, b) == (a == b), "\(a.map(\.label)) vs \(b.map(\.label))")
            }
        }
        #expect(Column.sameList(base, rebuilt))
        #expect(Column.sameList(base, base))
    }

    @Test func keysOfColumnListsAreEqualExactlyWhenTheirListsAndAttachmentKeysAre() {
        let a = Self.columns(["ab", "cd"])
        let alike = Self.columns(["xy", "zw"])  // same lengths and types: hashes alike
        #expect(ColumnListKey(a) == ColumnListKey(Self.columns(["ab", "cd"])))
        #expect(ColumnListKey(a).hashValue == ColumnListKey(alike).hashValue)
        #expect(ColumnListKey(a) != ColumnListKey(alike))
        #expect(ColumnListKey(a, attachmentKeys: ["titles"]) != ColumnListKey(a, attachmentKeys: ["salaries"]))
        #expect(ColumnListKey(a, attachmentKeys: ["titles"]) == ColumnListKey(a, attachmentKeys: ["titles"]))
    }
}
