import Foundation
import JWTKit
import Logging
import Synchronization

/// The public keys that verify RS, PS, ES and EdDSA tokens: those of the JWKS file, joined by
/// those of a JWKS URL, which are fetched again as ``JWKSRefreshPolicy`` says.
///
/// Contract:
/// - ``keys(for:)`` returns the keys to verify a token with `kid` now: when the policy asks for
///   a fetch it waits for it (one fetch at a time; concurrent callers wait for the same one).
/// - A fetch that fails (unreachable, not 200, not a JWKS, no usable key) keeps the keys held
///   before, and is logged; the policy's cooldown spaces the next attempt.
/// - A fetch that succeeds replaces the URL's keys whole: a key the provider removed no longer
///   verifies. Each replacement increases ``generation``, so verified tokens remembered under
///   an older generation are verified again.
/// - Keys a JWKS holds that cannot verify tokens (an RSA key under 2,048 bits, an unknown
///   `kty` or curve) are skipped with a warning naming their `kid`, not fatal, and a token
///   naming one is told why; a key without `kid` is skipped too (a token chooses its key by
///   `kid`). Each key is fixed to its algorithms as it is loaded (``JWKSKeys``).
public final class JWKSKeySource: Sendable {
    /// Fetches the JWKS document's bytes (``JWKSFetcher``; a closure in tests).
    public typealias Fetch = @Sendable () async throws -> Data

    private struct State: Sendable {
        /// The keys of the last successful fetch (with the file's); nil before it.
        var fetched: JWKSKeys?
        var lastSuccess: ContinuousClock.Instant?
        var lastAttempt: ContinuousClock.Instant?
        var fetching: Task<Void, Never>?
    }

    public let policy: JWKSRefreshPolicy
    private let fetch: Fetch?
    private let fileKeys: [JWK]
    /// The file's keys alone: what is held until a fetch succeeds.
    private let initial: Task<JWKSKeys, Never>
    private let initialIdentifiers: Set<String>
    private let state = Mutex(State())
    private let logger: Logger

    /// - Parameters:
    ///   - fileKeys: the JWKS file's keys, always held (not refreshed).
    ///   - fetch: the URL's fetch; nil when there is no URL (the file's keys are all).
    public init(fileKeys: JWKS?, fetch: Fetch?, policy: JWKSRefreshPolicy, logger: Logger = Logger(label: "spout.identity")) {
        let keys = fileKeys?.keys ?? []
        self.fileKeys = keys
        self.fetch = fetch
        self.policy = policy
        self.logger = logger
        self.initialIdentifiers = Set(keys.compactMap { $0.keyIdentifier?.string })
        self.initial = Task { await JWKSKeys.load(keys, generation: 0, logger: logger) }
    }

    /// The `kid`s held now.
    public var identifiers: Set<String> { self.state.withLock { $0.fetched?.identifiers } ?? self.initialIdentifiers }

    /// The generation of the keys held now.
    public var generation: Int { self.state.withLock { $0.fetched?.generation ?? 0 } }

    /// The keys to verify a token naming `kid` (nil: none named) with, fetched first when the
    /// policy says so.
    public func keys(for kid: String?) async -> JWKSKeys {
        let now = ContinuousClock.now
        let wait: Task<Void, Never>? = self.state.withLock { state in
            guard self.fetch != nil else { return nil }
            if let fetching = state.fetching { return fetching }
            let held = state.fetched?.identifiers ?? self.initialIdentifiers
            let known = kid.map { held.contains($0) } ?? !held.isEmpty
            guard self.policy.needsFetch(now: now, lastSuccess: state.lastSuccess, lastAttempt: state.lastAttempt, keyIsKnown: known)
            else { return nil }
            return self.startFetch(&state, at: now)
        }
        await wait?.value
        if let fetched = self.state.withLock({ $0.fetched }) { return fetched }
        return await self.initial.value
    }

    /// Fetches the URL's keys now (at start, so the first request does not wait), whatever the
    /// policy; returns how many keys are held afterwards.
    @discardableResult
    public func refreshNow() async -> Int {
        let task: Task<Void, Never> = self.state.withLock { state in
            state.fetching ?? self.startFetch(&state, at: .now)
        }
        await task.value
        return self.identifiers.count
    }

    /// Starts the one fetch, recording the attempt; called with the lock held.
    private func startFetch(_ state: inout State, at now: ContinuousClock.Instant) -> Task<Void, Never> {
        state.lastAttempt = now
        let task = Task { await self.refresh() }
        state.fetching = task
        return task
    }

    private func refresh() async {
        var replacement: JWKSKeys?
        do {
            guard let fetch = self.fetch else { return }
            let data = try await fetch()
            let fetched: JWKS
            do {
                fetched = try JSONDecoder().decode(JWKS.self, from: data)
            } catch {
                throw JWKSFetchError.notJWKS
            }
            let generation = self.generation + 1
            let loaded = await JWKSKeys.load(self.fileKeys + fetched.keys, generation: generation, logger: self.logger)
            let usable = fetched.keys.filter { key in key.keyIdentifier.map { loaded.identifiers.contains($0.string) } ?? false }.count
            // An empty set is the provider's word (every key withdrawn); a set of which
            // nothing is usable is a mistake, and the keys held before are safer.
            guard usable > 0 || fetched.keys.isEmpty else { throw JWKSFetchError.noUsableKey }
            replacement = loaded
            self.logger.debug(
                "identity.jwksUrl: keys fetched", metadata: ["keys": "\(usable)", "skipped": "\(fetched.keys.count - usable)"])
        } catch {
            self.logger.warning(
                "identity.jwksUrl: cannot fetch the keys; the keys held before stay in use",
                metadata: ["reason": "\(error)"])
        }
        self.state.withLock { state in
            state.fetching = nil
            guard let replacement else { return }
            state.fetched = replacement
            state.lastSuccess = .now
        }
    }
}

/// Why the keys of a JWKS URL were not taken (logged; the message holds no key).
public enum JWKSFetchError: Error, Sendable, Hashable, CustomStringConvertible {
    case status(Int)
    case tooLarge(Int)
    case notJWKS
    case noUsableKey

    public var description: String {
        switch self {
        case .status(let status): "the URL answered \(status)"
        case .tooLarge(let limit): "the document is larger than \(limit) bytes"
        case .notJWKS: "the document is not a JWKS ({\"keys\": [...]})"
        case .noUsableKey: "no key of the document can verify tokens"
        }
    }
}
