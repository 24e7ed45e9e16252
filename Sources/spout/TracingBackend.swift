import Logging
import OTel
import ServiceLifecycle
import SpoutEndpoints
import Tracing

/// The tracer `spout serve` gives its server when tracing is on (#34), and the service that
/// exports its spans: swift-otel's OTLP/HTTP exporter behind a batch span processor.
///
/// On when `tracing.enabled` (`SPOUT_TRACING_ENABLED`) or `OTEL_TRACES_EXPORTER=otlp`; off
/// whenever `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. The `tracing` section
/// sets the exporter; the standard `OTEL_*` variables, which swift-otel reads, override it
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_SERVICE_NAME`,
/// `OTEL_TRACES_SAMPLER`, `OTEL_BSP_SCHEDULE_DELAY`, ...). Only traces: Spout's metrics are
/// Prometheus' and its logs its own.
struct TracingBackend {
    let tracer: any Tracer
    let service: any Service

    /// The backend `settings` and `environment` ask for; nil when tracing is off. Throws a
    /// ``ConfigurationError`` for a protocol it does not speak.
    static func make(_ settings: SpoutConfiguration.Tracing, environment: [String: String], logger: Logger) throws -> TracingBackend? {
        let exporter = environment["OTEL_TRACES_EXPORTER"]?.lowercased()
        guard settings.enabled || exporter == "otlp" else { return nil }
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" || exporter == "none" { return nil }
        var configuration = OTel.Configuration.default
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.serviceName = settings.serviceName
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .warning
        configuration.propagators = [.traceContext]
        configuration.traces.exporter = .otlp
        switch settings.protocol {
        case "http/protobuf": configuration.traces.otlpExporter.protocol = .httpProtobuf
        case "http/json": configuration.traces.otlpExporter.protocol = .httpJSON
        default:
            throw ConfigurationError(
                file: "configuration", message: "tracing.protocol must be http/protobuf or http/json, not '\(settings.protocol)'")
        }
        if !settings.endpoint.isEmpty {
            // A base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is: the signal's path is added.
            configuration.traces.otlpExporter.endpoint = Self.tracesURL(base: settings.endpoint)
        }
        let ratio = Double(settings.samplePercent) / 100
        configuration.traces.sampler = ratio >= 1 ? .parentBasedAlwaysOn : .parentBasedTraceIDRatio(ratio: ratio) ?? .parentBasedAlwaysOn
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        return TracingBackend(tracer: backend.factory, service: backend.service)
    }

    /// `base` with `/v1/traces` added, as the OTLP specification derives a signal's URL from
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`.
    static func tracesURL(base: String) -> String {
        base.hasSuffix("/") ? base + "v1/traces" : base + "/v1/traces"
    }
}
