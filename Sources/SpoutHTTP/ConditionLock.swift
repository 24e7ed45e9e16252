#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex with a condition variable, for a producer thread that must block until an event
/// loop lets it continue. Waiting blocks the calling thread: never wait on an event loop.
///
/// `@unchecked Sendable`: the pthread mutex and condition are designed to be shared between
/// threads; they are allocated once, never moved, and destroyed in `deinit` when no thread can
/// hold a reference any more.
final class ConditionLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    var mutexPointer: UnsafeMutablePointer<pthread_mutex_t> { self.mutex }
    var conditionPointer: UnsafeMutablePointer<pthread_cond_t> { self.condition }
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        self.mutex = .allocate(capacity: 1)
        self.condition = .allocate(capacity: 1)
        pthread_mutex_init(self.mutex, nil)
        pthread_cond_init(self.condition, nil)
    }

    deinit {
        pthread_cond_destroy(self.condition)
        pthread_mutex_destroy(self.mutex)
        self.condition.deallocate()
        self.mutex.deallocate()
    }

    /// Runs `body` holding the lock.
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        return try body()
    }

    /// Runs `body` holding the lock, then wakes every waiter.
    func withLockSignalling<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(self.mutex)
        defer {
            pthread_cond_broadcast(self.condition)
            pthread_mutex_unlock(self.mutex)
        }
        return try body()
    }
}

extension ConditionLock {
    /// Acquires the lock; pair with ``unlock()``. Prefer ``withLock(_:)``.
    func lock() {
        pthread_mutex_lock(self.mutexPointer)
    }

    func unlock() {
        pthread_mutex_unlock(self.mutexPointer)
    }

    /// Waits for a signal; call holding the lock (it is released while waiting).
    func waitForSignal() {
        pthread_cond_wait(self.conditionPointer, self.mutexPointer)
    }
}
