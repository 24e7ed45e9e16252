import Foundation
import SpoutCore

extension Database {
    /// A lease of a connection slot, taken as soon as one is free (polled every 10 ms, never
    /// longer than `timeout`): a lease released by a request that just ended may take a moment
    /// to come back. For tests, which hold leases to see what a full pool does.
    public func leaseSoon(readOnly: Bool, timeout: Duration = .seconds(10)) throws -> ConnectionLease {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let lease = try self.leaseIfFree(readOnly: readOnly) { return lease }
            guard ContinuousClock.now < deadline else { throw DatabaseError(.poolExhausted) }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// Runs `body` on the calling thread with a connection leased by ``leaseSoon(readOnly:timeout:)``
    /// and releases it: tests' set-up and checks, outside any request's rules.
    public func withConnection<T>(readOnly: Bool, _ body: (any DatabaseConnection) throws -> T) throws -> T {
        let lease = try self.leaseSoon(readOnly: readOnly)
        defer { lease.release() }
        return try lease.withConnection(body)
    }
}

extension RowStream {
    /// Writes the stream with a connection of its database (``SpoutCore/Database/withConnection(readOnly:_:)``),
    /// on the calling thread. For tests.
    @discardableResult
    public func write(as format: OutputFormat, shape: ResultShape = .array, to sink: any ByteSink) throws -> Int {
        guard let database = self.database else {
            throw DatabaseError(.unsupported, message: "this stream has no database; use write(as:shape:to:on:)")
        }
        return try database.withConnection(readOnly: true) { connection in
            try self.write(as: format, shape: shape, to: sink, on: connection, dateFormat: database.configuration.dateFormat)
        }
    }
}
