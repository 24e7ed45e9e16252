import SpoutCore

/// The `Server-Timing` response header (W3C Server Timing): named durations in milliseconds,
/// shown by browsers' developer tools next to the request.
public enum ServerTiming {
    /// `acquire;dur=0.012, db;dur=1.274, encode;dur=0.031`: each metric's duration in ms, to the
    /// microsecond.
    public static func header(_ metrics: [(name: String, duration: Duration)]) -> String {
        metrics.map { name, duration in
            let microseconds = duration.wholeNanoseconds / 1000
            let whole = microseconds / 1000
            let fraction = String(microseconds % 1000)
            return "\(name);dur=\(whole).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
        }.joined(separator: ", ")
    }
}
