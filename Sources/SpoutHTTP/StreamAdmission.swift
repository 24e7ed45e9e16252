import Synchronization

/// A cap on concurrent streams per client address, and optionally in all: the streamed
/// responses' (``ServerConfiguration/maximumStreamsPerAddress``), so one client cannot take
/// every stream slot, spool budget and pool connection streams may use; and the event streams
/// of live notices (SpoutEndpoints), capped per address and in all.
///
/// The address is the socket's peer; behind a proxy in ``ServerConfiguration/trustedProxies``
/// it is the nearest address in `X-Forwarded-For` that is not a trusted proxy (each proxy
/// appends the address it saw), so clients behind the proxy are told apart.
public final class StreamAdmission: Sendable {
    /// Streams one address may have at once; 0: no cap.
    public let limit: Int
    /// Streams all addresses may have at once; 0: no cap.
    public let total: Int
    private let streams = Mutex<(perAddress: [String: Int], all: Int)>(([:], 0))

    public init(limit: Int, total: Int = 0) {
        self.limit = limit
        self.total = total
    }

    /// Why a stream was not admitted.
    public enum Refusal: Error, Sendable {
        /// The address has ``limit`` streams (429).
        case address
        /// All addresses together have ``total`` (503).
        case total
    }

    /// Counts a stream for `address`, or says which cap refused it (nothing counted).
    func admit(_ address: String) -> Refusal? {
        self.streams.withLock { streams in
            let count = streams.perAddress[address, default: 0]
            if self.limit > 0 && count >= self.limit { return .address }
            if self.total > 0 && streams.all >= self.total { return .total }
            streams.perAddress[address] = count + 1
            streams.all += 1
            return nil
        }
    }

    /// Ends a stream counted by ``admit(_:)``.
    func end(_ address: String) {
        self.streams.withLock { streams in
            let remaining = streams.perAddress[address, default: 1] - 1
            streams.perAddress[address] = remaining > 0 ? remaining : nil
            streams.all = max(0, streams.all - 1)
        }
    }

    /// How many streams are counted now, in all.
    public var count: Int { self.streams.withLock { $0.all } }

    /// One admitted stream; ``end()`` ends it (once; later calls do nothing).
    public final class Ticket: Sendable {
        private let admission: StreamAdmission
        private let address: String
        private let ended = Mutex(false)

        init(admission: StreamAdmission, address: String) {
            self.admission = admission
            self.address = address
        }

        public func end() {
            let first = self.ended.withLock { ended in
                defer { ended = true }
                return !ended
            }
            if first { self.admission.end(self.address) }
        }
    }

    /// A ticket for a stream of `address`, or nil when a cap refuses it.
    func ticket(for address: String) -> Ticket? {
        try? self.admitting(address).get()
    }

    /// A ticket for a stream of `address`, or the cap that refuses it.
    public func admitting(_ address: String) -> Result<Ticket, Refusal> {
        if let refusal = self.admit(address) { return .failure(refusal) }
        return .success(Ticket(admission: self, address: address))
    }

    /// The address streams of a request are counted under.
    static func clientAddress(peer: String, forwardedFor: [String], trustedProxies: [String]) -> String {
        guard trustedProxies.contains(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { String($0.filter { !$0.isWhitespace }) }
        return hops.reversed().first { !$0.isEmpty && !trustedProxies.contains($0) } ?? peer
    }
}
