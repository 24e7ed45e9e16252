#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's open-file limit (`RLIMIT_NOFILE`), which bounds how many connections a server
/// can hold: every connection is a descriptor.
///
/// Most systems start processes with a soft limit of 1,024 and a much higher hard limit
/// (systemd: 524,288; Docker: 1,048,576). Any process may raise its soft limit up to the hard
/// one; ``raiseSoftLimitToHardLimit()`` does, and ``automaticConnectionLimit(reserved:)`` sizes
/// a connection cap from the result.
public enum OpenFileLimit {
    /// The most connections the automatic limit ever allows, whatever the descriptors: beyond
    /// this, memory and the event loops, not descriptors, are what runs out.
    public static let automaticCeiling = 16_384

    /// The current soft limit, or nil when it cannot be read (or is unlimited).
    public static var softLimit: Int? {
        var limit = rlimit()
        guard getrlimit(Self.resource, &limit) == 0, limit.rlim_cur != Self.infinity else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// Raises the soft limit to the hard limit (capped at 1,048,576, which Linux's `nr_open`
    /// allows by default). Returns the soft limit afterwards; never lowers it.
    @discardableResult
    public static func raiseSoftLimitToHardLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(Self.resource, &limit) == 0 else { return nil }
        let target = min(limit.rlim_max, rlim_t(1 << 20))
        if limit.rlim_cur != Self.infinity && limit.rlim_cur < target {
            limit.rlim_cur = target
            _ = setrlimit(Self.resource, &limit)
        }
        return self.softLimit
    }

    /// A connection cap for the current soft limit: the descriptors left after `reserved` ones
    /// (database connections, log and data files, the listening socket), at least 64, at most
    /// ``automaticCeiling``.
    public static func automaticConnectionLimit(reserved: Int) -> Int {
        let available = (self.softLimit ?? Self.automaticCeiling + reserved) - reserved
        return min(max(available, 64), Self.automaticCeiling)
    }

    /// `RLIM_INFINITY` (all bits set; Swift cannot import the C macro's `-1` as unsigned).
    private static let infinity = rlim_t.max

    #if os(Linux)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}
