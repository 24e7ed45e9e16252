extension Duration {
    /// Whole milliseconds, at least 1: how statement timeouts are handed to a connection
    /// (a positive duration never rounds down to 0, which would mean "no timeout").
    public var statementTimeoutMilliseconds: Int {
        let (seconds, attoseconds) = self.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}
