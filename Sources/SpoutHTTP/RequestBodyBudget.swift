import Synchronization

/// The request bodies a server holds in memory at once, across all its connections.
///
/// Every body is read whole before its route runs (each at most its route's
/// ``Route/maximumBodySize`` or ``ServerConfiguration/maximumBodySize``), so without a bound
/// for all of them together many clients uploading at once (a photo endpoint's 5 MB each,
/// from many addresses) could take the process's memory. A request reserves its body's bytes
/// as they arrive, so a client that announces a large body and trickles it holds only what it
/// sent; a request whose announced `Content-Length` has no room (``hasRoom(for:)``), or whose
/// next bytes would take the total past ``limit``, is answered `503` with `Retry-After`. The
/// bytes are given back when the request ends.
///
/// Contract: ``reserve(_:for:)`` never lets ``bytesInUse`` exceed ``limit`` (0: no limit); a
/// ``Reservation`` gives its bytes back once, at ``Reservation/end()`` or when it is freed.
final class RequestBodyBudget: Sendable {
    /// Most bytes of request bodies held at once; 0 for no limit.
    let limit: Int
    private let used = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = max(0, limit)
    }

    /// Bytes reserved now.
    var bytesInUse: Int {
        self.used.load(ordering: .relaxed)
    }

    /// Whether `bytes` more would fit now (nothing is reserved).
    func hasRoom(for bytes: Int) -> Bool {
        self.limit == 0 || self.bytesInUse + bytes <= self.limit
    }

    /// Takes `bytes` from the budget for `reservation`; false (nothing taken) when that would
    /// pass the limit.
    func reserve(_ bytes: Int, for reservation: Reservation) -> Bool {
        guard bytes > 0 else { return true }
        guard self.limit > 0 else {
            reservation.add(bytes)
            return true
        }
        var current = self.used.load(ordering: .relaxed)
        while true {
            guard current + bytes <= self.limit else { return false }
            let (exchanged, original) = self.used.compareExchange(
                expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
        reservation.add(bytes)
        return true
    }

    fileprivate func giveBack(_ bytes: Int) {
        guard self.limit > 0, bytes > 0 else { return }
        self.used.subtract(bytes, ordering: .relaxed)
    }

    /// The bytes one request holds; confined to its connection's event loop until it ends.
    final class Reservation {
        private let budget: RequestBodyBudget
        private(set) var bytes = 0

        init(budget: RequestBodyBudget) {
            self.budget = budget
        }

        deinit {
            self.end()
        }

        fileprivate func add(_ bytes: Int) {
            self.bytes += bytes
        }

        /// Gives the bytes back (once: later calls give nothing).
        func end() {
            self.budget.giveBack(self.bytes)
            self.bytes = 0
        }
    }
}
