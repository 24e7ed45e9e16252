import Prometheus
import SpoutCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The server's metrics, in a Prometheus registry of its own (one per server, so servers in one
/// process never mix their counts), served in the Prometheus text format by
/// ``exposition()``.
///
/// Contract:
/// - Every family has `# HELP` text and a name that `promtool check metrics` accepts (counters
///   end in `_total`, units are base units in the name); ``Family`` lists them all. Process
///   metrics carry the Prometheus client libraries' standard names (`process_*`), which
///   dashboards expect.
/// - Requests are counted and timed by route *template* (`/employees/{employeeNumber}`),
///   never by raw path, so the number of series is bounded by the routes; a request that
///   matches no route counts under `unmatched`.
/// - Every metric name always carries the same label names (Prometheus requires it).
/// - Process gauges are read when scraped, not on the request path.
/// - The databases' metrics are not this type's: whoever composes HTTP with databases adds
///   theirs to ``registry`` (SpoutEndpoints' `DatabaseMetrics`).
/// - Recording costs a dictionary lookup under a lock per request (the per-route series are
///   created once), plus lock-free counter updates.
///
/// The metrics are made through swift-prometheus's registry rather than the swift-metrics API:
/// swift-metrics has no HELP text, and its Prometheus factory registers every family without
/// one.
public final class ServerMetrics: Sendable {
    /// The registry the metrics live in.
    public let registry: PrometheusCollectorRegistry
    private let series = Mutex<[SeriesKey: RouteSeries]>([:])
    private let firstBytes: LabeledDurationHistograms
    /// The CPU seconds already added to `process_cpu_seconds_total` (a counter only grows, so
    /// each scrape adds what the process used since the last one).
    private let cpuSecondsCounted = Mutex<Double>(0)

    let responseBytes: Counter
    let rowsSent: Counter
    let streamsInFlight: Gauge
    let backpressurePauses: Counter
    let clientDisconnects: Counter

    /// The buckets of every duration histogram: 0.5 ms to 60 s.
    static let durationBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
    ]

    private struct SeriesKey: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    private struct RouteSeries {
        var requests: Counter
        var duration: DurationHistogram
    }

    public init() {
        self.registry = PrometheusCollectorRegistry()
        self.responseBytes = self.registry.makeCounter(descriptor: Family.responseBytes.descriptor)
        self.rowsSent = self.registry.makeCounter(descriptor: Family.rowsSent.descriptor)
        self.streamsInFlight = self.registry.makeGauge(descriptor: Family.streamsInFlight.descriptor)
        self.backpressurePauses = self.registry.makeCounter(descriptor: Family.backpressurePauses.descriptor)
        self.clientDisconnects = self.registry.makeCounter(descriptor: Family.clientDisconnects.descriptor)
        self.firstBytes = LabeledDurationHistograms(registry: self.registry, family: Family.timeToFirstByte, label: "route")
    }

    // MARK: Recording

    /// One request answered (or abandoned): counted and timed by route, method and status.
    func requestCompleted(route: String, method: String, status: Int, duration: Duration, bytes: Int, rows: Int?) {
        let key = SeriesKey(route: route, method: method, status: status)
        let series = self.series.withLock { series in
            if let existing = series[key] { return existing }
            let labels = [("route", route), ("method", method), ("status", String(status))]
            let created = RouteSeries(
                requests: self.registry.makeCounter(descriptor: Family.requests.descriptor, labels: labels),
                duration: self.registry.makeDurationHistogram(
                    descriptor: Family.requestDuration.descriptor, labels: labels, buckets: Self.durationBuckets))
            series[key] = created
            return created
        }
        series.requests.increment()
        series.duration.recordNanoseconds(duration.wholeNanoseconds)
        if bytes > 0 { self.responseBytes.increment(by: Int64(bytes)) }
        if let rows, rows > 0 { self.rowsSent.increment(by: Int64(rows)) }
    }

    /// A streamed response sent its first byte `elapsed` after its request arrived.
    func firstByte(route: String, after elapsed: Duration) {
        self.firstBytes.record(elapsed, for: route)
    }

    // MARK: Exposition

    /// The Prometheus text format of every metric in ``registry``, after reading the process
    /// gauges.
    public func exposition() -> [UInt8] {
        self.recordProcess()
        return self.registry.emitToBuffer()
    }

    /// The standard process metrics; a value this platform cannot read is left out.
    private func recordProcess() {
        if let cpuSeconds = ProcessStatus.cpuSeconds {
            let added = self.cpuSecondsCounted.withLock { counted in
                defer { counted = max(counted, cpuSeconds) }
                return cpuSeconds - counted
            }
            let cpu = self.registry.makeCounter(descriptor: Family.processCPU.descriptor)
            if added > 0 { cpu.increment(by: added) }
        }
        let gauges: [(Family, Int?)] = [
            (.processResidentMemory, ProcessStatus.residentBytes),
            (.processVirtualMemory, ProcessStatus.virtualBytes),
            (.processOpenDescriptors, ProcessStatus.openDescriptors),
            (.processMaximumDescriptors, ProcessStatus.maximumDescriptors),
        ]
        for case (let family, let value?) in gauges {
            self.registry.makeGauge(descriptor: family.descriptor).set(to: Double(value))
        }
        if let start = ProcessStatus.startTimeSeconds {
            self.registry.makeGauge(descriptor: Family.processStartTime.descriptor).set(to: start)
        }
    }
}

extension ServerMetrics {
    /// Every metric family `/metrics` can show: its name (which `promtool check metrics`
    /// accepts) and its HELP text. A family appears once it has a series: the per-route ones
    /// after the first request of their kind, the process ones when the platform reports them.
    enum Family: String, CaseIterable, MetricFamily {
        case requests = "spout_http_requests_total"
        case requestDuration = "spout_http_request_duration_seconds"
        case timeToFirstByte = "spout_http_time_to_first_byte_seconds"
        case responseBytes = "spout_http_response_bytes_total"
        case rowsSent = "spout_rows_sent_total"
        case streamsInFlight = "spout_streams_in_flight"
        case backpressurePauses = "spout_backpressure_pauses_total"
        case streamsSpooled = "spout_streams_spooled_total"
        case streamsHeld = "spout_streams_held_total"
        case streamsRefused = "spout_streams_refused_total"
        case spoolBytes = "spout_spool_bytes"
        case clientDisconnects = "spout_client_disconnects_total"
        case processCPU = "process_cpu_seconds_total"
        case processResidentMemory = "process_resident_memory_bytes"
        case processVirtualMemory = "process_virtual_memory_bytes"
        case processOpenDescriptors = "process_open_fds"
        case processMaximumDescriptors = "process_max_fds"
        case processStartTime = "process_start_time_seconds"

        /// The `# HELP` text: one line, what is measured and in what unit.
        var help: String {
            switch self {
            case .requests: "HTTP requests answered or abandoned, by route template, method and status."
            case .requestDuration: "Time from a request's head to the last byte of its response handed to the socket, in seconds."
            case .timeToFirstByte: "Streamed responses: time from the request's head to the first chunk, in seconds."
            case .responseBytes: "Response body bytes sent, before compression."
            case .rowsSent: "Top-level rows written into responses."
            case .streamsInFlight: "Streamed responses running now."
            case .backpressurePauses: "Times a stream waited for a client's socket to drain."
            case .streamsSpooled: "Streamed responses that spooled to disk because the client read slower than the database."
            case .streamsHeld: "Streamed responses that held their database connection while the client read (spool cap reached or disk refused)."
            case .streamsRefused: "Streamed responses refused with 429 by the per-address stream cap."
            case .spoolBytes: "Bytes of streamed responses waiting for their clients, in memory or in spool files."
            case .clientDisconnects: "Clients that closed the connection before their response was complete."
            case .processCPU: "Total user and system CPU time spent, in seconds."
            case .processResidentMemory: "Resident memory size in bytes."
            case .processVirtualMemory: "Virtual memory size in bytes."
            case .processOpenDescriptors: "Number of open file descriptors."
            case .processMaximumDescriptors: "Maximum number of open file descriptors."
            case .processStartTime: "Start time of the process since the Unix epoch, in seconds."
            }
        }
    }
}

/// A metric family: its name (the raw value, which `promtool check metrics` accepts: counters
/// end in `_total`, units are base units) and its one-line `# HELP` text. Every metric Spout
/// serves is made from one (``ServerMetrics/Family``, SpoutEndpoints' `DatabaseMetrics.Family`).
public protocol MetricFamily: RawRepresentable<String>, Sendable {
    /// What is measured and in what unit, one line.
    var help: String { get }
}

extension MetricFamily {
    /// The name and HELP text as swift-prometheus takes them.
    public var descriptor: MetricNameDescriptor {
        MetricNameDescriptor(metricName: self.rawValue, unitName: "", helpText: self.help)
    }
}

/// This process's standard measurements, read from `/proc/self` and the C library (Linux;
/// nil elsewhere), as the Prometheus client libraries report them.
enum ProcessStatus {
    /// `process_resident_memory_bytes`: the second field of `/proc/self/statm`, in bytes.
    static var residentBytes: Int? { self.statmPages(field: 1).map { $0 * self.pageSize } }

    /// `process_virtual_memory_bytes`: the first field of `/proc/self/statm`, in bytes.
    static var virtualBytes: Int? { self.statmPages(field: 0).map { $0 * self.pageSize } }

    /// `process_cpu_seconds_total`: user and system CPU time of every thread so far.
    static var cpuSeconds: Double? {
        #if os(Linux)
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return nil }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
        #else
        return nil
        #endif
    }

    /// `process_max_fds`: the soft limit on open descriptors (`RLIMIT_NOFILE`), nil when
    /// unlimited.
    static var maximumDescriptors: Int? { OpenFileLimit.softLimit }

    /// `process_start_time_seconds`: when the process started, in seconds since the Unix epoch
    /// (the boot time of `/proc/stat` plus the start of `/proc/self/stat`, in clock ticks).
    static var startTimeSeconds: Double? {
        #if os(Linux)
        guard let stat = try? String(contentsOfFileAtPath: "/proc/self/stat"),
            let afterName = stat.lastIndex(of: ")"),
            // Fields after the command name start with the state (field 3); starttime is 22.
            let ticks = stat[stat.index(after: afterName)...].split(separator: " ").dropFirst(19).first.flatMap({ Double($0) }),
            let system = try? String(contentsOfFileAtPath: "/proc/stat"),
            let bootLine = system.split(separator: "\n").first(where: { $0.hasPrefix("btime ") }),
            let boot = bootLine.split(separator: " ").last.flatMap({ Double($0) })
        else { return nil }
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard ticksPerSecond > 0 else { return nil }
        return boot + ticks / ticksPerSecond
        #else
        return nil
        #endif
    }

    static var openDescriptors: Int? {
        #if os(Linux)
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            // The name is read in place, three bytes at most: a record is only as long as its
            // name, so copying the whole `d_name` field could read past the directory's buffer.
            let isDots = withUnsafePointer(to: &entry.pointee.d_name) { field in
                field.withMemoryRebound(to: UInt8.self, capacity: 3) { name in
                    name[0] == UInt8(ascii: ".") && (name[1] == 0 || (name[1] == UInt8(ascii: ".") && name[2] == 0))
                }
            }
            if !isDots { count += 1 }
        }
        return count - 1  // the directory stream's own descriptor
        #else
        return nil
        #endif
    }

    private static var pageSize: Int {
        #if os(Linux)
        Int(sysconf(Int32(_SC_PAGESIZE)))
        #else
        4096
        #endif
    }

    /// Field `field` (from 0) of `/proc/self/statm`, in pages.
    private static func statmPages(field: Int) -> Int? {
        #if os(Linux)
        guard let statm = try? String(contentsOfFileAtPath: "/proc/self/statm") else { return nil }
        return statm.split(separator: " ").dropFirst(field).first.flatMap { Int($0) }
        #else
        return nil
        #endif
    }
}

extension String {
    /// The contents of a small text file, read with POSIX calls (no Foundation in this module).
    fileprivate init(contentsOfFileAtPath path: String) throws {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw ProcessStatusError() }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        self = String(decoding: bytes, as: UTF8.self)
    }
}

private struct ProcessStatusError: Error {}
