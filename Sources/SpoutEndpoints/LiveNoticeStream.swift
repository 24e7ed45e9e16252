import HTTPTypes
import SpoutCore
import SpoutHTTP

/// The answer to `GET <syncable endpoint>` with `Accept: text/event-stream`: an event stream
/// of live notices (docs/endpoints.md, Live notices), open until the client leaves, its token
/// expires or it reads too slowly. The work is ``LiveNotices``'; this admits the stream,
/// subscribes and returns; the stream's end is handled when it comes.
struct LiveNoticeStream: ResponseProducer {
    var notices: LiveNotices
    var subscription: LiveNotices.Subscription
    /// When the caller's token expires; nil: never.
    var expires: ContinuousClock.Instant?

    /// The reconnection delay the stream asks of clients, in milliseconds.
    static let retryMilliseconds = 1_000

    func produce(status: HTTPResponse.Status, headers: HTTPFields, through exchange: ResponseExchange) async throws {
        let ticket: StreamAdmission.Ticket
        switch self.notices.admission.admitting(exchange.clientAddress) {
        case .success(let admitted): ticket = admitted
        case .failure(.address):
            self.notices.metrics?.refusedPerAddress.increment()
            throw HTTPError(status: .tooManyRequests, message: "too many event streams from this client", headers: [.retryAfter: "5"])
        case .failure(.total):
            self.notices.metrics?.refusedInAll.increment()
            throw HTTPError(status: .serviceUnavailable, message: "too many event streams open; retry", headers: [.retryAfter: "5"])
        }
        var fields = headers
        fields.replaceOrAdd(.cacheControl, "no-store")
        let sink = exchange.startEventStream(headers: fields)
        let subscriber = NoticeSubscriber(sink: sink, expires: self.expires, metrics: self.notices.metrics)
        sink.onClose { subscriber.finish(.left) }
        do {
            try await self.notices.subscribe(subscriber, to: self.subscription)
        } catch {
            // Nothing was written yet unless a notice came first: a status still can go out.
            await self.notices.leave(subscriber)
            sink.clearOnClose()
            exchange.finishStream(sink, result: .failure(error))
            ticket.end()
            return
        }
        subscriber.open(retryMilliseconds: Self.retryMilliseconds)
        // The stream outlives this task: its end is handled where it happens (the connection's
        // close, a tick, a slow write), so an idle stream keeps no suspended task alive.
        let notices = self.notices
        subscriber.whenEnded { end in
            sink.clearOnClose()
            switch end {
            case .dropped: exchange.finishStream(sink, result: .failure(SlowSubscriber()))
            case .expired, .left: exchange.finishStream(sink, result: .success(0))
            }
            ticket.end()
            Task { await notices.leave(subscriber) }
        }
    }
}

/// A subscriber left a notice unread past the limit: its connection is closed (it reconnects
/// with `Last-Event-ID` and loses nothing).
struct SlowSubscriber: Error, CustomStringConvertible {
    var description: String { "the client left a live notice unread past the limit; dropped" }
}
