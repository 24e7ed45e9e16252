import Prometheus
import SpoutCore
import Synchronization

/// The duration histograms of one metric family, one per value of one label (a route, a
/// database), each made in the registry on its first use and kept. The values must be a
/// bounded set: every one is a series.
public final class LabeledDurationHistograms: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let family: any MetricFamily
    private let label: String
    private let histograms = Mutex<[String: DurationHistogram]>([:])

    public init(registry: PrometheusCollectorRegistry, family: some MetricFamily, label: String) {
        self.registry = registry
        self.family = family
        self.label = label
    }

    /// Records `duration` in the histogram of `value`, with ``ServerMetrics/durationBuckets``.
    public func record(_ duration: Duration, for value: String) {
        let histogram = self.histograms.withLock { histograms in
            if let histogram = histograms[value] { return histogram }
            let histogram = self.registry.makeDurationHistogram(
                descriptor: self.family.descriptor, labels: [(self.label, value)], buckets: ServerMetrics.durationBuckets)
            histograms[value] = histogram
            return histogram
        }
        histogram.recordNanoseconds(duration.wholeNanoseconds)
    }
}
