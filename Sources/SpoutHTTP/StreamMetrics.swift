import Prometheus

/// The metrics of streams that outlive their database work: spooling, holding, and how long
/// streams keep database connections. Registered in the server's registry with help text.
final class StreamMetrics: Sendable {
    /// Streams whose client fell behind far enough that they spooled to disk.
    let spooled: Counter
    /// Streams that had to hold their database connection while the client read (a spool cap
    /// or the disk refused).
    let held: Counter
    /// Seconds database connections were leased by streamed responses.
    let connectionSeconds: Counter
    /// Bytes queued in streams' memory spools, and in their files.
    let memoryBytes: Gauge
    let diskBytes: Gauge
    /// Streams refused by the per-address stream cap.
    let refused: Counter

    init(registry: PrometheusCollectorRegistry) {
        func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "spout", metricName: metric, unitName: unit, helpText: help)
        }
        self.spooled = registry.makeCounter(
            descriptor: name("streams_spooled", "total", "Streamed responses that spooled to disk because the client read slower than the database."))
        self.held = registry.makeCounter(
            descriptor: name(
                "streams_held", "total", "Streamed responses that held their database connection while the client read (spool cap reached or disk refused)."))
        self.connectionSeconds = registry.makeCounter(
            descriptor: name("stream_connection_seconds", "total", "Seconds database connections were leased by streamed responses."))
        let bytes = name("spool", "bytes", "Bytes of streamed responses waiting for their clients, in memory or in spool files.")
        self.memoryBytes = registry.makeGauge(descriptor: bytes, labels: [("medium", "memory")])
        self.diskBytes = registry.makeGauge(descriptor: bytes, labels: [("medium", "disk")])
        self.refused = registry.makeCounter(
            descriptor: name("streams_refused", "total", "Streamed responses refused with 429 by the per-address stream cap."))
    }
}
