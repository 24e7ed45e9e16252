import HTTPTypes
import NIOCore
import NIOHTTP1

/// The `Expect` field (RFC 9110 §10.1.1) for ``HTTPConnectionHandler``.
extension HTTPConnectionHandler {
    /// Answers the expectation of a request whose head just arrived (and whose body is not too
    /// large: that is a 413 before this). `100-continue` on an HTTP/1.1 request that sends a
    /// body gets `100 Continue` at once: a client that waits for it before sending its body
    /// (curl and libcurl for bodies above 1 MiB, .NET's `HttpClient`) would otherwise wait out
    /// its own timer, a second for curl, on every upload. Without a body there is nothing to
    /// continue; an HTTP/1.0 request's expectation is ignored, as the RFC says. Any other
    /// expectation is `417 Expectation Failed`, and the connection closes (a body may follow).
    func meetExpectation(of exchange: InFlightRequest, context: ChannelHandlerContext) {
        let values = exchange.requestFields[values: .expect]
        guard !values.isEmpty, exchange.version.major == 1, exchange.version.minor >= 1 else { return }
        let expectations = values.flatMap { $0.split(separator: ",") }.map { $0.trimmingBlanks.lowercased() }.filter { !$0.isEmpty }
        guard expectations.allSatisfy({ $0 == "100-continue" }) else {
            self.answerBeforeTheBody(
                ErrorResponse(status: .expectationFailed, message: "only Expect: 100-continue is supported"), exchange: exchange,
                context: context)
            return
        }
        guard exchange.sendsBody else { return }
        let interim = HTTPResponseHead(version: exchange.version, status: .continue)
        context.writeAndFlush(self.wrapOutboundOut(.head(interim)), promise: nil)
    }
}
