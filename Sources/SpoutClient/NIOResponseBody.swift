import NIOCore
import Synchronization

/// The body of a response read through ``ResponseStreamHandler``: each ``nextChunk()`` asks
/// the handler on its event loop for what has arrived, and it reads the socket when nothing
/// has. Releasing the reader closes the connection; so does cancelling the reading task,
/// which then throws `CancellationError`.
final class NIOResponseBody: ResponseBodyReader {
    private let channel: any Channel
    private let handler: NIOLoopBound<ResponseStreamHandler>
    private let receivedTrailers = Mutex(SpoutHeaders())

    var trailers: SpoutHeaders { self.receivedTrailers.withLock { $0 } }

    init(channel: any Channel, handler: NIOLoopBound<ResponseStreamHandler>) {
        self.channel = channel
        self.handler = handler
    }

    deinit {
        self.channel.close(promise: nil)
    }

    func nextChunk() async throws -> [UInt8]? {
        let handler = self.handler
        let channel = self.channel
        let buffers: [ByteBuffer]?
        let trailers: SpoutHeaders
        do {
            (buffers, trailers) = try await withTaskCancellationHandler {
                try await channel.eventLoop.flatSubmit {
                    handler.value.demand().map { buffers in (buffers, buffers == nil ? handler.value.trailers : SpoutHeaders()) }
                }.get()
            } onCancel: {
                channel.close(promise: nil)
            }
        } catch {
            try Task.checkCancellation()
            throw error
        }
        guard let buffers else {
            self.receivedTrailers.withLock { $0 = trailers }
            return nil
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(buffers.reduce(0) { $0 + $1.readableBytes })
        for buffer in buffers { bytes += buffer.readableBytesView }
        return bytes
    }

    func close() {
        self.channel.close(promise: nil)
    }
}
