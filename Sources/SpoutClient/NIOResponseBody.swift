import HTTPTypes
import NIOCore
import Synchronization

/// The body of a response read through ``ResponseStreamHandler``: each ``nextChunk()`` asks
/// the handler on its event loop for what has arrived, and it reads the socket when nothing
/// has.
///
/// The connection goes back to its pool once the body ended (when the response allows
/// keep-alive); releasing the reader or calling ``close()`` before the end closes it instead,
/// and so does cancelling the reading task, which then throws `CancellationError`.
final class NIOResponseBody: ResponseBodyReader {
    private let connection: ConnectionPool.Connection
    private let pool: ConnectionPool
    private let receivedTrailers = Mutex(HTTPFields())
    private let released = Atomic<Bool>(false)

    var trailers: HTTPFields { self.receivedTrailers.withLock { $0 } }

    init(connection: ConnectionPool.Connection, pool: ConnectionPool) {
        self.connection = connection
        self.pool = pool
    }

    deinit {
        self.release()
    }

    func nextChunk() async throws -> [UInt8]? {
        let handler = self.connection.handler
        let channel = self.connection.channel
        let buffers: [ByteBuffer]?
        let trailers: HTTPFields
        let reusable: Bool
        do {
            (buffers, trailers, reusable) = try await withTaskCancellationHandler {
                try await channel.eventLoop.flatSubmit {
                    handler.value.demand().map { buffers in
                        guard buffers == nil else { return (buffers, HTTPFields(), false) }
                        return (nil, handler.value.trailers, handler.value.isReusable)
                    }
                }.get()
            } onCancel: {
                channel.close(promise: nil)
            }
        } catch {
            self.release()
            try Task.checkCancellation()
            throw error
        }
        guard let buffers else {
            self.receivedTrailers.withLock { $0 = trailers }
            self.release(endedReusable: reusable)
            return nil
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(buffers.reduce(0) { $0 + $1.readableBytes })
        for buffer in buffers { bytes += buffer.readableBytesView }
        return bytes
    }

    func close() {
        self.release()
    }

    /// Hands the connection back to the pool, which parks it if its body ended cleanly and
    /// closes it otherwise; only the first call does anything. `endedReusable`: the body's end
    /// was just read and the handler said the connection is reusable, so it is parked at once
    /// (the caller's next request finds it).
    private func release(endedReusable: Bool = false) {
        guard !self.released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if endedReusable {
            self.pool.parkReusable(self.connection)
        } else {
            self.pool.release(self.connection)
        }
    }
}
