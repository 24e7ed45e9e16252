import Synchronization

/// The per-address cap on concurrent streamed responses
/// (``ServerConfiguration/maximumStreamsPerAddress``): one client cannot take every stream
/// slot, spool budget and pool connection streams may use.
///
/// The address is the socket's peer; behind a proxy in ``ServerConfiguration/trustedProxies``
/// it is the nearest address in `X-Forwarded-For` that is not a trusted proxy (each proxy
/// appends the address it saw), so clients behind the proxy are told apart.
final class StreamAdmission: Sendable {
    let limit: Int
    private let streams = Mutex<[String: Int]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    /// Counts a stream for `address`; false (nothing counted) when the address is at the cap.
    func admit(_ address: String) -> Bool {
        guard self.limit > 0 else { return true }
        return self.streams.withLock { streams in
            let count = streams[address, default: 0]
            guard count < self.limit else { return false }
            streams[address] = count + 1
            return true
        }
    }

    /// Ends a stream counted by ``admit(_:)``.
    func end(_ address: String) {
        guard self.limit > 0 else { return }
        self.streams.withLock { streams in
            let remaining = streams[address, default: 1] - 1
            streams[address] = remaining > 0 ? remaining : nil
        }
    }

    /// One admitted stream; ``end()`` ends it (once; later calls do nothing).
    final class Ticket: Sendable {
        private let admission: StreamAdmission
        private let address: String
        private let ended = Mutex(false)

        init(admission: StreamAdmission, address: String) {
            self.admission = admission
            self.address = address
        }

        func end() {
            let first = self.ended.withLock { ended in
                defer { ended = true }
                return !ended
            }
            if first { self.admission.end(self.address) }
        }
    }

    /// A ticket for a stream of `address`, or nil when the address is at the cap.
    func ticket(for address: String) -> Ticket? {
        self.admit(address) ? Ticket(admission: self, address: address) : nil
    }

    /// The address streams of a request are counted under.
    static func clientAddress(peer: String, forwardedFor: [String], trustedProxies: [String]) -> String {
        guard trustedProxies.contains(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { String($0.filter { !$0.isWhitespace }) }
        return hops.reversed().first { !$0.isEmpty && !trustedProxies.contains($0) } ?? peer
    }
}
