#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SpoutCore

/// Receives the progress of a load, file by file.
///
/// Calls happen on the loading thread, in this order for each file: ``progress(file:rowsDone:bytesDone:bytesTotal:)``
/// once with zero rows when the file starts, then every few thousand rows, then once with
/// `bytesDone == bytesTotal`; then ``finished(file:rows:seconds:)`` once. Nothing is called
/// for a file after an error in it. `file` is the file's name (not its full path).
public protocol LoadProgressReporter: AnyObject {
    func progress(file: String, rowsDone: Int, bytesDone: Int64, bytesTotal: Int64)
    func finished(file: String, rows: Int, seconds: Double)
}

/// A ``LoadProgressReporter`` that forwards both calls to closures.
public final class ClosureProgressReporter: LoadProgressReporter {
    private let onProgress: (String, Int, Int64, Int64) -> Void
    private let onFinished: (String, Int, Double) -> Void

    public init(
        progress: @escaping (_ file: String, _ rowsDone: Int, _ bytesDone: Int64, _ bytesTotal: Int64) -> Void,
        finished: @escaping (_ file: String, _ rows: Int, _ seconds: Double) -> Void = { _, _, _ in }
    ) {
        self.onProgress = progress
        self.onFinished = finished
    }

    public func progress(file: String, rowsDone: Int, bytesDone: Int64, bytesTotal: Int64) {
        self.onProgress(file, rowsDone, bytesDone, bytesTotal)
    }

    public func finished(file: String, rows: Int, seconds: Double) {
        self.onFinished(file, rows, seconds)
    }
}

/// Reporters that write to standard output.
public enum LoadProgressReporters {
    /// A ``TerminalProgressReporter`` when standard output is a terminal (`isatty`), a
    /// ``PlainProgressReporter`` otherwise (pipes, files, CI logs).
    public static func standardOutput() -> any LoadProgressReporter {
        if isatty(STDOUT_FILENO) != 0 {
            return TerminalProgressReporter()
        }
        return PlainProgressReporter()
    }

    /// Writes `text` to standard output, unbuffered.
    public static func writeToStandardOutput(_ text: String) {
        _ = DescriptorWrite.all(Array(text.utf8), to: STDOUT_FILENO)
    }
}

/// Draws one progress bar per file on a terminal, redrawn in place with `\r` at most ten
/// times a second, and leaves a finished line per file:
///
/// ```
/// load_salaries1.dump  [##############----------]  58%   551,232 rows  402,311 rows/s
/// ```
public final class TerminalProgressReporter: LoadProgressReporter {
    private let output: (String) -> Void
    private let barWidth: Int
    private let clock = ContinuousClock()
    private var fileStart: ContinuousClock.Instant
    private var lastDraw: ContinuousClock.Instant?

    /// - Parameters:
    ///   - barWidth: characters between the brackets.
    ///   - output: where the text goes (standard output by default).
    public init(barWidth: Int = 30, output: @escaping (String) -> Void = LoadProgressReporters.writeToStandardOutput) {
        self.output = output
        self.barWidth = max(barWidth, 5)
        self.fileStart = self.clock.now
    }

    public func progress(file: String, rowsDone: Int, bytesDone: Int64, bytesTotal: Int64) {
        let now = self.clock.now
        if rowsDone == 0 && bytesDone == 0 {
            self.fileStart = now
            self.lastDraw = nil
        }
        if let lastDraw = self.lastDraw, now - lastDraw < .milliseconds(100), bytesDone < bytesTotal {
            return
        }
        self.lastDraw = now
        let seconds = ProgressFormat.seconds(now - self.fileStart)
        self.output("\r" + self.line(file: file, rows: rowsDone, bytesDone: bytesDone, bytesTotal: bytesTotal, seconds: seconds) + "\u{1B}[K")
    }

    public func finished(file: String, rows: Int, seconds: Double) {
        self.lastDraw = nil
        self.output("\r" + self.line(file: file, rows: rows, bytesDone: 1, bytesTotal: 1, seconds: seconds) + "\u{1B}[K\n")
    }

    /// The text of one bar (without `\r`).
    func line(file: String, rows: Int, bytesDone: Int64, bytesTotal: Int64, seconds: Double) -> String {
        let fraction = bytesTotal > 0 ? min(max(Double(bytesDone) / Double(bytesTotal), 0), 1) : 1
        let filled = Int((fraction * Double(self.barWidth)).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: self.barWidth - filled)
        let percent = ProgressFormat.leftPad(String(Int((fraction * 100).rounded(.down))), 3)
        let rate = seconds > 0 ? Int(Double(rows) / seconds) : 0
        return ProgressFormat.rightPad(file, 22) + " [" + bar + "] " + percent + "% "
            + ProgressFormat.leftPad(ProgressFormat.grouped(rows), 11) + " rows "
            + ProgressFormat.leftPad(ProgressFormat.grouped(rate), 11) + " rows/s"
    }
}

/// Writes one plain line when a file starts and one when it is finished; for pipes and logs.
///
/// ```
/// loading load_salaries1.dump (2.1 MB)
/// load_salaries1.dump: 51,053 rows in 0.21 s (243,110 rows/s)
/// ```
public final class PlainProgressReporter: LoadProgressReporter {
    private let output: (String) -> Void

    public init(output: @escaping (String) -> Void = LoadProgressReporters.writeToStandardOutput) {
        self.output = output
    }

    public func progress(file: String, rowsDone: Int, bytesDone: Int64, bytesTotal: Int64) {
        if rowsDone == 0 && bytesDone == 0 {
            self.output("loading \(file) (\(ProgressFormat.megabytes(bytesTotal)))\n")
        }
    }

    public func finished(file: String, rows: Int, seconds: Double) {
        let rate = seconds > 0 ? Int(Double(rows) / seconds) : 0
        self.output(
            "\(file): \(ProgressFormat.grouped(rows)) rows in \(ProgressFormat.decimal(seconds, digits: 2)) s (\(ProgressFormat.grouped(rate)) rows/s)\n")
    }
}

/// Number formatting for progress output, independent of the locale.
enum ProgressFormat {
    /// `1234567` → `1,234,567`.
    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var result = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(character)
        }
        return value < 0 ? "-" + result : result
    }

    /// `value` with exactly `digits` decimals (rounded).
    static func decimal(_ value: Double, digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int((value * scale).rounded())
        let whole = scaled / Int(scale)
        let fraction = String(abs(scaled % Int(scale)))
        guard digits > 0 else { return String(whole) }
        return String(whole) + "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }

    static func megabytes(_ bytes: Int64) -> String {
        self.decimal(Double(bytes) / 1_000_000, digits: 1) + " MB"
    }

    static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
    }

    static func leftPad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    static func rightPad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}
