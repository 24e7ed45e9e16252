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
        let answer = Connection.answer(
            toExpectation: exchange.requestFields[values: .expect], version: exchange.version, sendsBody: exchange.sendsBody)
        switch answer {
        case .none:
            break
        case .refuse:
            self.answerBeforeTheBody(
                ErrorResponse(status: .expectationFailed, message: "only Expect: 100-continue is supported"), exchange: exchange,
                context: context)
        case .sendContinue:
            let interim = HTTPResponseHead(version: exchange.version, status: .continue)
            context.writeAndFlush(self.wrapOutboundOut(.head(interim)), promise: nil)
        }
    }
}

extension HTTPConnectionStateMachine {
    /// How a request's `Expect` field is answered.
    enum ExpectationAnswer: Equatable {
        /// Nothing to answer: no expectation, no body to continue, or HTTP/1.0.
        case none
        /// `100 Continue` now, before the body.
        case sendContinue
        /// `417 Expectation Failed`, and the connection closes (a body may follow).
        case refuse
    }

    /// The answer to the `Expect` field `values` of a request of `version` that sends a body
    /// when `sendsBody`, by the rules of ``HTTPConnectionHandler/meetExpectation(of:context:)``.
    static func answer(toExpectation values: [String], version: HTTPVersion, sendsBody: Bool) -> ExpectationAnswer {
        guard !values.isEmpty, version.major == 1, version.minor >= 1 else { return .none }
        let expectations = values.flatMap { $0.split(separator: ",") }.map { $0.trimmingBlanks.lowercased() }.filter { !$0.isEmpty }
        guard expectations.allSatisfy({ $0 == "100-continue" }) else { return .refuse }
        return sendsBody ? .sendContinue : .none
    }
}
