extension Duration {
    /// Whole milliseconds, at least 1: how statement timeouts are handed to a connection
    /// (a positive duration never rounds down to 0, which would mean "no timeout").
    public var statementTimeoutMilliseconds: Int {
        let (seconds, attoseconds) = self.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating): how metrics record durations.
    public var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = self.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled &+ attoseconds / 1_000_000_000
    }
}
