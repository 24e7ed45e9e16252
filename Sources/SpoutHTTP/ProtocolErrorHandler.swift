import HTTPTypes
import NIOCore
import NIOHTTP1

/// Answers requests the HTTP parser rejects: 431 when the head is too large, 400 otherwise,
/// then lets the decoder close the connection.
///
/// It sits right after `HTTPServerPipelineHandler`, before the compressor and the request
/// handler (which never see a request the parser could not read), and tracks whether a
/// response is under way: it can only answer when none is.
final class ProtocolErrorHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private var responseInProgress = false

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        if !self.responseInProgress {
            let response = parserError == .headerOverflow
                ? ErrorResponse(status: .requestHeaderFieldsTooLarge, message: "request header fields too large")
                : ErrorResponse(status: .badRequest, message: "malformed request")
            let fields: HTTPFields = [
                .contentType: "application/json", .connection: "close", .contentLength: String(response.body.count),
            ]
            let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(response.status), headers: HTTPHeaders(fields))
            context.write(self.wrapOutboundOut(.head(head)), promise: nil)
            context.write(self.wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: response.body)))), promise: nil)
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
        }
        context.close(promise: nil)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch self.unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200 || head.status == .switchingProtocols:
            self.responseInProgress = true
        case .end:
            self.responseInProgress = false
        default:
            break
        }
        context.write(data, promise: promise)
    }
}
