import SpoutCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes one test_db-style dump file: extended INSERTs of `rowsPerStatement` rows,
/// ``INSERT INTO `table` VALUES (...),\n(...);``, buffered in memory and written in large
/// blocks.
final class DumpWriter {
    let path: String
    private let table: String
    private let rowsPerStatement: Int
    private var descriptor: Int32
    private var buffer: [UInt8] = []
    private var rowsInStatement = 0
    private var valuesInRow = 0
    private(set) var rowCount = 0
    private static let flushThreshold = 1 << 20

    /// Creates (or truncates) the file at `path`.
    init(path: String, table: String, rowsPerStatement: Int) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else {
            throw DataLoadError(.io, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        self.path = path
        self.table = table
        self.rowsPerStatement = max(rowsPerStatement, 1)
        self.descriptor = descriptor
        self.buffer.reserveCapacity(Self.flushThreshold + 4096)
    }

    deinit {
        if self.descriptor >= 0 {
            _ = close(self.descriptor)
        }
    }

    /// Starts a row: begins a new INSERT when needed, or separates it from the previous row.
    func beginRow() throws {
        if self.rowsInStatement == 0 {
            self.append("INSERT INTO `")
            self.append(self.table)
            self.append("` VALUES ")
        } else {
            self.buffer.append(UInt8(ascii: ","))
            self.buffer.append(UInt8(ascii: "\n"))
        }
        self.buffer.append(UInt8(ascii: "("))
        self.valuesInRow = 0
    }

    /// Ends a row: closes the INSERT after `rowsPerStatement` rows.
    func endRow() throws {
        self.buffer.append(UInt8(ascii: ")"))
        self.rowsInStatement += 1
        self.rowCount += 1
        if self.rowsInStatement == self.rowsPerStatement {
            self.buffer.append(UInt8(ascii: ";"))
            self.buffer.append(UInt8(ascii: "\n"))
            self.rowsInStatement = 0
        }
        if self.buffer.count >= Self.flushThreshold {
            try self.flush()
        }
    }

    func integer(_ value: Int) {
        self.separator()
        if value < 0 { self.buffer.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var divisor: UInt = 1
        while divisor <= magnitude / 10 { divisor *= 10 }
        while divisor > 0 {
            self.buffer.append(UInt8(ascii: "0") + UInt8(magnitude / divisor))
            magnitude %= divisor
            divisor /= 10
        }
    }

    /// A quoted `'YYYY-MM-DD'` date.
    func date(days: Int) {
        self.separator()
        let (year, month, day) = CivilTime.civil(days: Int64(days))
        self.buffer.append(UInt8(ascii: "'"))
        self.digits(Int(year), width: 4)
        self.buffer.append(UInt8(ascii: "-"))
        self.digits(Int(month), width: 2)
        self.buffer.append(UInt8(ascii: "-"))
        self.digits(Int(day), width: 2)
        self.buffer.append(UInt8(ascii: "'"))
    }

    /// A single-quoted string with MySQL escapes for `'`, `\`, NUL, newline, return and Ctrl-Z.
    func string(_ text: String) {
        self.separator()
        self.buffer.append(UInt8(ascii: "'"))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "'"), UInt8(ascii: "\\"):
                self.buffer.append(UInt8(ascii: "\\"))
                self.buffer.append(byte)
            case 0:
                self.append("\\0")
            case UInt8(ascii: "\n"):
                self.append("\\n")
            case UInt8(ascii: "\r"):
                self.append("\\r")
            case 0x1A:
                self.append("\\Z")
            default:
                self.buffer.append(byte)
            }
        }
        self.buffer.append(UInt8(ascii: "'"))
    }

    /// Ends the last statement, writes everything and closes the file.
    func finish() throws {
        if self.rowsInStatement > 0 {
            self.buffer.append(UInt8(ascii: ";"))
            self.buffer.append(UInt8(ascii: "\n"))
            self.rowsInStatement = 0
        }
        try self.flush()
        if self.descriptor >= 0 {
            let result = close(self.descriptor)
            self.descriptor = -1
            guard result == 0 else {
                throw DataLoadError(.io, "cannot write \(self.path): \(String(cString: strerror(errno)))")
            }
        }
    }

    private func separator() {
        if self.valuesInRow > 0 { self.buffer.append(UInt8(ascii: ",")) }
        self.valuesInRow += 1
    }

    private func digits(_ value: Int, width: Int) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            self.buffer.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
            rest %= divisor
            divisor /= 10
        }
    }

    private func append(_ text: String) {
        self.buffer.append(contentsOf: text.utf8)
    }

    private func flush() throws {
        if let code = DescriptorWrite.all(self.buffer, to: self.descriptor) {
            throw DataLoadError(.io, "cannot write \(self.path): \(String(cString: strerror(code)))")
        }
        self.buffer.removeAll(keepingCapacity: true)
    }
}
