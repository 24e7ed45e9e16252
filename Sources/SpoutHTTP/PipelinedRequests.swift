import NIOHTTP1

/// The requests a client sent on a connection before the response to the one being answered
/// had ended (HTTP/1.1 pipelining), as the parser delivered them, in order; held by the
/// connection's ``HTTPConnectionStateMachine``.
///
/// Reading goes on while a response is written, so a connection that does not pipeline (nearly
/// every client) never has its socket's read interest turned off and on again around each
/// request (two `epoll_ctl` calls a request); the first pipelined part stops further reads
/// until the parts held are taken up, so what is held is bounded by one read. Confined to
/// its connection's event loop.
struct PipelinedRequests {
    /// One thing the parser delivered: a part of a request, or its refusal of the bytes.
    enum Arrival {
        case part(HTTPServerRequestPart)
        case parserError(HTTPParserError)
    }

    private var arrivals: [Arrival] = []
    private var next = 0

    /// Whether anything is held.
    var isEmpty: Bool { self.next == self.arrivals.count }

    /// Holds `arrival` after those already held.
    mutating func hold(_ arrival: Arrival) {
        self.arrivals.append(arrival)
    }

    /// The oldest arrival held, removed; nil when none is.
    mutating func takeFirst() -> Arrival? {
        guard self.next < self.arrivals.count else { return nil }
        let arrival = self.arrivals[self.next]
        self.next += 1
        if self.next == self.arrivals.count {
            self.arrivals.removeAll(keepingCapacity: true)
            self.next = 0
        }
        return arrival
    }

    /// Forgets everything held (the connection is closing).
    mutating func drop() {
        self.arrivals.removeAll()
        self.next = 0
    }
}
