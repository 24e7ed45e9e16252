import Logging
import NIOPosix
import Synchronization

/// What every stream's spool shares: the configuration, the disk budget over all streams, the
/// threads that read spool files back, the threads that feed large whole bodies into it, and
/// the metrics.
///
/// Contract: ``reserveDisk(_:)`` and ``releaseDisk(_:)`` keep the bytes in spool files within
/// ``SpoolConfiguration/maximumBytes``; each reservation is released exactly once by the sink
/// that made it. Reads run on ``io``, never on an event loop.
final class SpoolService: Sendable {
    let configuration: SpoolConfiguration
    /// Reads spool files back (short `pread`s); its own threads, so reads never wait behind
    /// database work.
    let io: NIOThreadPool
    /// Write large bodies sent whole into their sinks (``ResponseExchange/send(status:headers:body:rows:)``):
    /// a sink may block its writer, which must not be an event loop, a task of the cooperative
    /// pool, or a thread that reads spool files back.
    let feeders: NIOThreadPool
    let logger: Logger
    let metrics: StreamMetrics?
    private let usage = Mutex(Usage())

    struct Usage: Sendable, Hashable {
        var disk = 0
        var memory = 0
    }

    init(configuration: SpoolConfiguration, logger: Logger, metrics: StreamMetrics?) {
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        self.io = NIOThreadPool(numberOfThreads: 2)
        self.feeders = NIOThreadPool(numberOfThreads: 2)
    }

    func start() {
        self.io.start()
        self.feeders.start()
    }

    func shutdown() async {
        try? await self.feeders.shutdownGracefully()
        try? await self.io.shutdownGracefully()
    }

    /// Bytes in spool files and memory spools now.
    var current: Usage { self.usage.withLock { $0 } }

    /// Takes `count` bytes of the disk budget; false when that would pass the total cap.
    func reserveDisk(_ count: Int) -> Bool {
        let total: Int? = self.usage.withLock { usage in
            guard usage.disk + count <= self.configuration.maximumBytes else { return nil }
            usage.disk += count
            return usage.disk
        }
        guard let total else { return false }
        self.metrics?.diskBytes.set(Double(total))
        return true
    }

    func releaseDisk(_ count: Int) {
        guard count > 0 else { return }
        let total = self.usage.withLock { usage in
            usage.disk -= count
            return usage.disk
        }
        self.metrics?.diskBytes.set(Double(total))
    }

    func memoryChanged(by delta: Int) {
        guard delta != 0 else { return }
        let total = self.usage.withLock { usage in
            usage.memory += delta
            return usage.memory
        }
        self.metrics?.memoryBytes.set(Double(total))
    }
}
