import Prometheus
import SpoutHTTP

/// The metrics of live notices: subscribers and groups now, events sent, subscribers dropped
/// or refused, polls of the change log and the queries that decided which groups a change
/// concerns. Its families live in the server's registry and are served with the rest.
///
/// Contract: every family has HELP text and a name `promtool check metrics` accepts; the
/// only label, `reason`, takes a fixed set of values.
public final class NoticeMetrics: Sendable {
    let subscribers: Gauge
    let groups: Gauge
    let events: Counter
    let heartbeats: Counter
    let dropped: Counter
    let refusedPerAddress: Counter
    let refusedInAll: Counter
    let polls: Counter
    let pollFailures: Counter
    let evaluationQueries: Counter
    let decidedWithoutQuery: Counter

    public init(registry: PrometheusCollectorRegistry) {
        self.subscribers = registry.makeGauge(descriptor: Family.subscribers.descriptor)
        self.groups = registry.makeGauge(descriptor: Family.groups.descriptor)
        self.events = registry.makeCounter(descriptor: Family.events.descriptor)
        self.heartbeats = registry.makeCounter(descriptor: Family.heartbeats.descriptor)
        self.dropped = registry.makeCounter(descriptor: Family.drops.descriptor)
        self.refusedPerAddress = registry.makeCounter(descriptor: Family.refusals.descriptor, labels: [("reason", "address")])
        self.refusedInAll = registry.makeCounter(descriptor: Family.refusals.descriptor, labels: [("reason", "total")])
        self.polls = registry.makeCounter(descriptor: Family.polls.descriptor)
        self.pollFailures = registry.makeCounter(descriptor: Family.pollFailures.descriptor)
        self.evaluationQueries = registry.makeCounter(descriptor: Family.evaluationQueries.descriptor)
        self.decidedWithoutQuery = registry.makeCounter(descriptor: Family.decidedWithoutQuery.descriptor)
    }

    /// Every family of the live notices' metrics: its name and its HELP text.
    enum Family: String, CaseIterable, MetricFamily {
        case subscribers = "spout_notice_subscribers"
        case groups = "spout_notice_groups"
        case events = "spout_notice_events_total"
        case heartbeats = "spout_notice_heartbeats_total"
        case drops = "spout_notice_drops_total"
        case refusals = "spout_notice_refusals_total"
        case polls = "spout_notice_polls_total"
        case pollFailures = "spout_notice_poll_failures_total"
        case evaluationQueries = "spout_notice_evaluation_queries_total"
        case decidedWithoutQuery = "spout_notice_evaluations_without_query_total"

        var help: String {
            switch self {
            case .subscribers: "Event streams of live notices open now."
            case .groups: "Groups of subscribers (one endpoint, arguments and identity) evaluated once per change."
            case .events: "Change events written to subscribers."
            case .heartbeats: "Heartbeat comments written to subscribers."
            case .drops: "Subscribers dropped because they left a notice unread past the limit."
            case .refusals: "Event streams refused, by the cap that refused them (address: 429, total: 503)."
            case .polls: "Reads of the change log's position and new changes."
            case .pollFailures: "Reads of the change log that failed (the database was unreachable); retried."
            case .evaluationQueries: "Statements run to decide whether a change concerns a group's result."
            case .decidedWithoutQuery: "Group evaluations decided without a query (a change to a key the group holds)."
            }
        }
    }
}
