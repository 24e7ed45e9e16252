// nio-floor PORT: answers every request with `{"status":"ok"}` (the bytes and head fields of
// Spout's `GET /health`, without its request id and trace fields), keep-alive, one event loop
// per core, as Spout's server is set up. With `NIO_FLOOR_PIPELINING=0` the pipeline goes without
// NIO's pipelining assistance (`HTTPServerPipelineHandler`), to measure what that handler costs.
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

final class FloorHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private static let body = Array(#"{"status":"ok"}"#.utf8)
    private var keepAlive = true

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.keepAlive = head.isKeepAlive
        case .body:
            break
        case .end:
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(Self.body.count))
            if !self.keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.write(self.wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: Self.body)))), promise: nil)
            let keepAlive = self.keepAlive
            context.writeAndFlush(self.wrapOutboundOut(.end(nil))).whenComplete { [context] _ in
                if !keepAlive { context.close(promise: nil) }
            }
        }
    }
}

let pipelining = ProcessInfo.processInfo.environment["NIO_FLOOR_PIPELINING"] != "0"
let port = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 8080 : 8080
let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 256)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: pipelining, withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(FloorHandler())
        }
    }
    .bind(host: "127.0.0.1", port: port)
    .wait()
print("listening on \(port)")
try channel.closeFuture.wait()
