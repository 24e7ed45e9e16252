import Foundation
import SpoutCore
import SpoutTestSupport
import Testing

/// docs/grafana-dashboard.json loads as JSON in the shape Grafana imports, and every metric its
/// queries name is one a live `spout serve` exposes after traffic of every kind.
@Suite("Grafana dashboard", .serialized)
struct GrafanaDashboardTests {
    static let path = RepositoryPaths.root + "/docs/grafana-dashboard.json"

    @Test("every metric the dashboard's queries name is in a live /metrics")
    func queriesNameExistingMetrics() async throws {
        let dashboard = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.path))) as? [String: Any])
        #expect(dashboard["title"] as? String == "Spout" && dashboard["uid"] is String && dashboard["schemaVersion"] is Int)
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        let queries = Self.queries(in: dashboard)
        for panel in panels where panel["type"] as? String != "row" {
            let targets = panel["targets"] as? [[String: Any]] ?? []
            #expect(!targets.isEmpty && targets.allSatisfy { $0["expr"] is String }, "panel \(panel["title"] ?? "?") has no query")
        }
        var referenced: Set<String> = []
        for query in queries {
            let names = query.text.matches(of: /\b(?:spout|process)_[a-z_]+\b/).map { String($0.output) }
            #expect(!names.isEmpty, "\(query.panel ?? "templating"): \(query.text) names no Spout metric")
            referenced.formUnion(names)
        }

        try await StreamsService.with(.sqlite, prefix: "spout_rel_dashboard", extraEndpoints: [:], poolSize: 2, statementTimeoutMs: 0) { service in
            let exposition = try await PromtoolTests.scrapeAfterTraffic(service).text
            let exposed = Set(
                exposition.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
                    String(line.prefix { $0 != "{" && $0 != " " })
                })
            for name in referenced.sorted() {
                #expect(exposed.contains(name), "the dashboard names \(name), which /metrics does not expose")
            }
        }
    }

    /// Every PromQL text of the dashboard: each panel target's `expr` (with its panel's title)
    /// and each templating query (panel nil).
    static func queries(in dashboard: [String: Any]) -> [(panel: String?, text: String)] {
        var queries: [(panel: String?, text: String)] = []
        for panel in dashboard["panels"] as? [[String: Any]] ?? [] {
            let title = panel["title"] as? String ?? "?"
            for target in panel["targets"] as? [[String: Any]] ?? [] {
                queries.append((title, target["expr"] as? String ?? ""))
            }
        }
        let templating = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        for variable in templating {
            if let query = (variable["query"] as? [String: Any])?["query"] as? String {
                queries.append((nil, query))
            }
        }
        return queries
    }
}
