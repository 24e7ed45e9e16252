import Foundation

extension SpoutClient {
    /// Opens (creating it if missing) the local store of the syncable endpoint at `path` with
    /// `query` for the client's caller: ``SpoutSyncStore``. No network: the rows it already
    /// holds answer at once, offline too.
    ///
    /// The file is `directory/sync-<hash>.sqlite`, the hash of the server's URL, `path`, the
    /// query items (in any order), `key` and the caller: two users of one device, or one user's
    /// two filters, never share a store. The caller is `account` when given, else the identity
    /// of the client's credentials as the response cache keys it: a bearer JWT's issuer and
    /// subject (a renewed token of the same user finds the same store), the SHA-256 of any
    /// other credential, or no one. With a derived identity, a ``SpoutSyncStore/sync()`` whose
    /// credentials have become another identity's throws instead of mixing their rows.
    ///
    /// - Parameters:
    ///   - key: the endpoint's `sync.key` columns, as its YAML declares them (`["name"]`).
    ///   - directory: where the app keeps its stores (Application Support, not Caches: the
    ///     system may empty Caches, and the next sync would download everything again).
    ///   - account: the app's own account id, to key the store by instead of the credentials.
    public func syncStore(
        path: String, query: [URLQueryItem] = [], key: [String], directory: URL, account: String? = nil
    ) async throws -> SpoutSyncStore {
        let url = try RequestTarget.url(base: self.baseURL, path: path, query: query)
        let owner = try await LocalFileOwner(client: self, account: account)
        let sortedQuery = query.map { $0.name + "=" + ($0.value ?? "") }.sorted().joined(separator: "&")
        let endpoint = [self.baseURL.absoluteString, path, sortedQuery]
        let file = try await SQLiteFile.open(
            path: owner.file(in: directory, prefix: "sync", parts: endpoint + [key.joined(separator: ",")]),
            schema: SpoutSyncStore.schema)
        return try await SpoutSyncStore(client: self, url: url, key: key, owner: owner, file: file, endpoint: endpoint.joined(separator: " "))
    }
}
