import Synchronization

/// A dictionary behind a lock that starts over once it holds `capacity` entries: the memo of
/// work done once per distinct input (parsed SQL, rewritten child statements, the columns a
/// statement answered with), bounded for callers whose inputs are not a fixed set.
///
/// Inlinable, so that a module using it gets a copy specialized for its key and value: a lookup
/// happens on every request, and unspecialized it went through generic metadata and witness
/// tables (half its cost in a profile of the detail request).
public final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline let entries = Mutex<[Key: Value]>([:])
    @usableFromInline let capacity: Int

    public init(capacity: Int) {
        self.capacity = capacity
    }

    /// The value stored under `key`, if any.
    @inlinable
    public subscript(key: Key) -> Value? {
        self.entries.withLock { $0[key] }
    }

    /// Stores `value` under `key`, first emptying the cache when it is full.
    @inlinable
    public func store(_ value: Value, for key: Key) {
        self.entries.withLock { entries in
            if entries.count >= self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = value
        }
    }

    /// The value under `key`, made by `make` (outside the lock) and stored when missing.
    @inlinable
    public func value(for key: Key, orMake make: () throws -> Value) rethrows -> Value {
        if let hit = self[key] { return hit }
        let value = try make()
        self.store(value, for: key)
        return value
    }
}
