import CoreMetrics
import Prometheus
import SpoutCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The server's metrics, recorded through swift-metrics into a Prometheus registry of its own
/// (one per server, so servers in one process never mix their counts) and served in the
/// Prometheus text format by ``exposition(databases:)``.
///
/// Contract:
/// - Requests are counted and timed by route *template* (`/employees/{employeeNumber}`),
///   never by raw path, so the number of series is bounded by the routes; a request that
///   matches no route counts under `unmatched`.
/// - Every metric name always carries the same label names (Prometheus requires it).
/// - Pool and process gauges are read when scraped, not on the request path.
/// - Recording costs a dictionary lookup under a lock per request (the per-route series are
///   created once), plus lock-free counter updates.
public final class ServerMetrics: Sendable {
    /// The registry the metrics live in.
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let started = ContinuousClock.now
    private let series = Mutex<[SeriesKey: RouteSeries]>([:])
    private let firstBytes = Mutex<[String: CoreMetrics.Timer]>([:])
    private let acquireWaits = Mutex<[String: CoreMetrics.Timer]>([:])

    let responseBytes: CoreMetrics.Counter
    let rowsSent: CoreMetrics.Counter
    let streamsInFlight: CoreMetrics.Meter
    let backpressurePauses: CoreMetrics.Counter
    let clientDisconnects: CoreMetrics.Counter
    let cancelsSent: CoreMetrics.Counter
    let acquireTimeouts: CoreMetrics.Counter
    let statementTimeouts: CoreMetrics.Counter

    private struct SeriesKey: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    private struct RouteSeries {
        var requests: CoreMetrics.Counter
        var duration: CoreMetrics.Timer
    }

    public init() {
        self.registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: self.registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
        ]
        self.factory = factory
        self.responseBytes = Counter(label: "spout_http_response_bytes_total", factory: factory)
        self.rowsSent = Counter(label: "spout_rows_sent_total", factory: factory)
        self.streamsInFlight = Meter(label: "spout_streams_in_flight", factory: factory)
        self.backpressurePauses = Counter(label: "spout_backpressure_pauses_total", factory: factory)
        self.clientDisconnects = Counter(label: "spout_client_disconnects_total", factory: factory)
        self.cancelsSent = Counter(label: "spout_statement_cancels_total", factory: factory)
        self.acquireTimeouts = Counter(label: "spout_pool_acquire_timeouts_total", factory: factory)
        self.statementTimeouts = Counter(label: "spout_statement_timeouts_total", factory: factory)
    }

    // MARK: Recording

    /// One request answered (or abandoned): counted and timed by route, method and status.
    func requestCompleted(route: String, method: String, status: Int, duration: Duration, bytes: Int, rows: Int?) {
        let key = SeriesKey(route: route, method: method, status: status)
        let series = self.series.withLock { series in
            if let existing = series[key] { return existing }
            let dimensions = [("route", route), ("method", method), ("status", String(status))]
            let created = RouteSeries(
                requests: Counter(label: "spout_http_requests_total", dimensions: dimensions, factory: self.factory),
                duration: Timer(label: "spout_http_request_duration_seconds", dimensions: dimensions, factory: self.factory))
            series[key] = created
            return created
        }
        series.requests.increment()
        series.duration.recordNanoseconds(duration.wholeNanoseconds)
        if bytes > 0 { self.responseBytes.increment(by: bytes) }
        if let rows, rows > 0 { self.rowsSent.increment(by: rows) }
    }

    /// A streamed response sent its first byte `elapsed` after its request arrived.
    func firstByte(route: String, after elapsed: Duration) {
        let timer = Self.timer(in: self.firstBytes, key: route) {
            Timer(label: "spout_http_time_to_first_byte_seconds", dimensions: [("route", route)], factory: self.factory)
        }
        timer.recordNanoseconds(elapsed.wholeNanoseconds)
    }

    /// A row response waited `elapsed` for a connection of the database named `database`.
    func acquiredConnection(database: String, after elapsed: Duration) {
        let timer = Self.timer(in: self.acquireWaits, key: database) {
            Timer(label: "spout_pool_acquire_wait_seconds", dimensions: [("database", database)], factory: self.factory)
        }
        timer.recordNanoseconds(elapsed.wholeNanoseconds)
    }

    /// Counts the database errors that have metrics of their own (503 acquire timeouts, 504
    /// statement timeouts).
    func failed(with error: any Error) {
        guard let error = error as? DatabaseError else { return }
        switch error.code {
        case .poolExhausted: self.acquireTimeouts.increment()
        case .statementTimeout: self.statementTimeouts.increment()
        default: break
        }
    }

    private static func timer(
        in cache: borrowing Mutex<[String: CoreMetrics.Timer]>, key: String, make: () -> CoreMetrics.Timer
    ) -> CoreMetrics.Timer {
        cache.withLock { timers in
            if let timer = timers[key] { return timer }
            let timer = make()
            timers[key] = timer
            return timer
        }
    }

    // MARK: Exposition

    /// The Prometheus text format of every metric, after reading the pool gauges of
    /// `databases` (and of their read replicas) and the process gauges.
    public func exposition(databases: [Database]) -> [UInt8] {
        for database in databases {
            self.recordPool(database, name: "primary")
            for replica in database.replicas?.replicas ?? [] {
                self.recordPool(replica.database, name: replica.name)
            }
        }
        self.recordProcess()
        return self.registry.emitToBuffer()
    }

    private func recordPool(_ database: Database, name: String) {
        let pool = database.poolState
        let dimensions = [("database", name)]
        Gauge(label: "spout_pool_connections_open", dimensions: dimensions, factory: self.factory).record(pool.open)
        Gauge(label: "spout_pool_connections_in_use", dimensions: dimensions, factory: self.factory).record(pool.inUse)
        Gauge(label: "spout_pool_connections_idle", dimensions: dimensions, factory: self.factory).record(pool.idle)
        Gauge(label: "spout_pool_waiters", dimensions: dimensions, factory: self.factory).record(pool.waiters)
    }

    private func recordProcess() {
        let uptime = ContinuousClock.now - self.started
        Gauge(label: "spout_process_uptime_seconds", factory: self.factory)
            .record(Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18)
        if let resident = ProcessStatus.residentBytes {
            Gauge(label: "spout_process_resident_memory_bytes", factory: self.factory).record(resident)
        }
        if let descriptors = ProcessStatus.openDescriptors {
            Gauge(label: "spout_process_open_fds", factory: self.factory).record(descriptors)
        }
    }
}

/// This process's resident memory and open descriptors, read from `/proc/self` (Linux).
enum ProcessStatus {
    static var residentBytes: Int? {
        #if os(Linux)
        guard let statm = try? String(contentsOfFileAtPath: "/proc/self/statm"),
            let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
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
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { count += 1 }
        }
        return count - 1  // the directory stream's own descriptor
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

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = self.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled &+ attoseconds / 1_000_000_000
    }
}
