import Prometheus

/// The metrics of streams that outlive their database work: spooling, holding, refusals.
/// Their names and HELP text are ``ServerMetrics/Family``'s. (How long streams lease database
/// connections is the databases' metric: SpoutEndpoints' `DatabaseMetrics`.)
final class StreamMetrics: Sendable {
    /// Streams whose client fell behind far enough that they spooled to disk.
    let spooled: Counter
    /// Streams that had to hold their database connection while the client read (a spool cap
    /// or the disk refused).
    let held: Counter
    /// Bytes queued in streams' memory spools, and in their files.
    let memoryBytes: Gauge
    let diskBytes: Gauge
    /// Streams refused by the per-address stream cap.
    let refused: Counter

    init(registry: PrometheusCollectorRegistry) {
        typealias Family = ServerMetrics.Family
        self.spooled = registry.makeCounter(descriptor: Family.streamsSpooled.descriptor)
        self.held = registry.makeCounter(descriptor: Family.streamsHeld.descriptor)
        self.memoryBytes = registry.makeGauge(descriptor: Family.spoolBytes.descriptor, labels: [("medium", "memory")])
        self.diskBytes = registry.makeGauge(descriptor: Family.spoolBytes.descriptor, labels: [("medium", "disk")])
        self.refused = registry.makeCounter(descriptor: Family.streamsRefused.descriptor)
    }
}
