/// What a server's streamed responses share: the spool and the per-address stream cap.
struct StreamServices: Sendable {
    /// Nil when spooling is off.
    var spool: SpoolService?
    var admission: StreamAdmission
    var metrics: StreamMetrics?
}
