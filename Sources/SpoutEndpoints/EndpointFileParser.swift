import Foundation
import HTTPTypes
import SpoutCore
import SpoutHTTP

/// Reads one endpoint file into ``Endpoint``s, checking everything that can be checked
/// without a database (see `docs/endpoints.md` for the format and the rules).
struct EndpointFileParser {
    /// What a parsed file holds.
    struct ParsedFile {
        var description: String?
        /// The `auth` section, when there is one.
        var auth: EndpointAuth?
        /// The endpoints, with ``Endpoint/apiKeys`` set on those `auth` covers.
        var endpoints: [Endpoint]
    }

    /// The directory `sqlFile` paths are relative to.
    let sqlDirectory: String
    /// The variables `auth` sections read their keys from.
    var environment: [String: String] = [:]
    /// How many levels details may nest (`maxDetailDepth`): 1 allows details without details.
    var maxDetailDepth = SpoutConfiguration.defaultMaxDetailDepth

    static let methods: [String: HTTPRequest.Method] = [
        "get": .get, "post": .post, "put": .put, "patch": .patch, "delete": .delete,
    ]
    static let fileKeys = ["description", "auth", "paths"]
    static let authKeys = ["keysFromEnvironment", "token", "methods", "anonymous", "roles", "requiredClaims"]
    static let endpointKeys = [
        "description", "sql", "sqlFile", "parameters", "result", "details", "detailsParameter", "timeoutMs",
        "rowLimit", "readOnly", "location", "mediaType", "mediaTypeColumn", "body", "mediaTypeParameter", "maxBodyBytes", "bulk", "consistency", "page", "sync", "cache", "versionSql", "versionSqlFile",
        "unknownParameters", "auth",
    ]
    static let pageKeys = ["key", "size", "maxSize"]
    static let syncKeys = ["key", "tables"]
    static let cacheKeys = ["maxAge", "public"]
    static let parameterKeys = [
        "name", "type", "required", "default", "allowedValues", "minimum", "maximum", "minLength", "maxLength", "description",
    ]
    static let detailKeys = ["name", "sql", "sqlFile", "description", "details"]
    static let typeNames = ["string", "integer", "number", "decimal", "boolean", "date", "datetime", "bytes"]

    /// Reads and parses `file`.
    func parse(file: String) throws(ConfigurationError) -> ParsedFile {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw ConfigurationError(file: file, message: "cannot read the endpoint file (\(SpoutConfiguration.reason(error)))")
        }
        return try self.parse(text, file: file)
    }

    func parse(_ text: String, file: String) throws(ConfigurationError) -> ParsedFile {
        guard let root = try YAMLValue.parse(text, file: file), !root.isNull else {
            throw ConfigurationError(file: file, line: 1, message: "the endpoint file is empty (it needs 'paths')")
        }
        let top = try root.mapping("an endpoint file", allowed: Self.fileKeys)
        let description = try top.value("description")?.string("'description'")
        var auth: (section: EndpointAuth, keys: APIKeySet?)?
        if let authValue = top.value("auth") { auth = try self.auth(authValue) }
        guard let pathsValue = top.value("paths") else {
            throw root.error("an endpoint file needs 'paths' (a mapping of path templates to methods)")
        }
        let tag = ((file as NSString).lastPathComponent as NSString).deletingPathExtension
        var endpoints: [Endpoint] = []
        for pathEntry in try pathsValue.mapping("'paths'").entries {
            try self.checkPath(pathEntry.name, at: pathEntry.key)
            let methods = try pathEntry.value.mapping("path '\(pathEntry.name)'", allowed: Array(Self.methods.keys).sorted())
            for methodEntry in methods.entries {
                let method = Self.methods[methodEntry.name]!
                // An endpoint's own `auth` replaces the file's for it.
                let own = try self.endpointAuth(methodEntry.value, method: method, path: pathEntry.name)
                let applying: (section: EndpointAuth, keys: APIKeySet?)?
                switch own {
                case .inherited: applying = auth.flatMap { $0.section.covers(method) ? $0 : nil }
                case .open: applying = nil
                case .own(let section, let keys): applying = (section, keys)
                }
                var endpoint = try self.endpoint(
                    method: method, path: pathEntry.name, value: methodEntry.value, key: methodEntry.key, tag: tag,
                    claimsAllowed: applying?.section.token != nil)
                if let applying {
                    endpoint.apiKeys = applying.keys
                    endpoint.tokenPolicy = applying.section.token
                }
                if case .own(let section, _) = own { endpoint.ownAuth = section }
                endpoints.append(endpoint)
            }
        }
        return ParsedFile(description: description, auth: auth?.section, endpoints: endpoints)
    }

    // MARK: Auth

    /// What an endpoint's own `auth` says: nothing (the file's applies), `none` (open,
    /// whatever the file says), or a section of its own, which covers this endpoint alone.
    private enum OwnAuth {
        case inherited
        case open
        case own(EndpointAuth, APIKeySet?)
    }

    /// Reads the `auth` of one endpoint (a method under a path): `auth: none`, or a mapping as
    /// the file's `auth` takes, without `methods` (it covers its own method).
    private func endpointAuth(_ value: YAMLValue, method: HTTPRequest.Method, path: String) throws(ConfigurationError) -> OwnAuth {
        // A value that is not a mapping is reported where the endpoint is read.
        guard let fields = try? value.mapping("\(method.rawValue) \(path)"), let authValue = fields.value("auth") else { return .inherited }
        if authValue.scalarText != nil {
            let word = try authValue.string("'auth'").trimmedBlanks
            guard word == "none" else {
                throw authValue.error("an endpoint's 'auth' is 'none' (open, whatever the file's 'auth' says) or a mapping, not '\(word)'")
            }
            return .open
        }
        if let methodsValue = try authValue.mapping("'auth'", allowed: Self.authKeys).value("methods") {
            throw methodsValue.error("an endpoint's 'auth' covers its own method (\(method.rawValue)): remove 'methods'")
        }
        let (section, keys) = try self.auth(authValue)
        var own = section
        own.methods = [method]
        return .own(own, keys)
    }

    /// Reads the `auth` section and the keys of its variable; see ``EndpointAuth``. Messages
    /// name the variable, never a key.
    private func auth(_ value: YAMLValue) throws(ConfigurationError) -> (section: EndpointAuth, keys: APIKeySet?) {
        let fields = try value.mapping("'auth'", allowed: Self.authKeys)
        let methods = try self.authMethods(fields.value("methods"))
        if let tokenValue = fields.value("token") {
            let kind = try tokenValue.nonEmptyString("'token'").trimmedBlanks
            guard kind == "jwt" else { throw tokenValue.error("'token' must be jwt (a verified bearer token), not '\(kind)'") }
            if fields.value("keysFromEnvironment") != nil {
                throw tokenValue.error("'auth' takes either 'token' or 'keysFromEnvironment', not both")
            }
            let anonymous = try fields.value("anonymous")?.boolean("'anonymous'") ?? false
            var roles: [String] = []
            if let rolesValue = fields.value("roles") {
                let items = try rolesValue.scalarOrSequence("'roles'")
                for item in items { roles.append(try item.nonEmptyString("an entry of 'roles'").trimmedBlanks) }
            }
            var required: [String] = []
            if let claimsValue = fields.value("requiredClaims") {
                let items = try claimsValue.scalarOrSequence("'requiredClaims'")
                for item in items {
                    let path = try item.nonEmptyString("an entry of 'requiredClaims'").trimmedBlanks
                    guard !path.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) else {
                        throw item.error("'\(path)' is not a claim path: names separated by single dots (email, address.city)")
                    }
                    required.append(path)
                }
            }
            if anonymous && !required.isEmpty, let node = fields.value("anonymous") {
                throw node.error("'anonymous: true' and 'requiredClaims' exclude each other: a request without a token has no claims")
            }
            let policy = TokenPolicy(anonymous: anonymous, roles: roles, requiredClaims: required)
            return (EndpointAuth(environmentVariable: "", methods: methods, keyCount: 0, token: policy), nil)
        }
        for name in ["anonymous", "roles", "requiredClaims"] where fields.value(name) != nil {
            throw fields.value(name)!.error("'\(name)' applies to 'token: jwt' only; API keys carry no identity")
        }
        guard let variableValue = fields.value("keysFromEnvironment") else {
            throw value.error(
                "'auth' needs 'keysFromEnvironment', the environment variable that holds the comma-separated API keys, "
                    + "or 'token: jwt' for verified bearer tokens")
        }
        let variable = try variableValue.nonEmptyString("'keysFromEnvironment'").trimmedBlanks
        guard EndpointAuth.isVariableName(variable) else {
            throw variableValue.error(
                "'keysFromEnvironment' must name an environment variable (letters, digits and underscores), not '\(variable)'")
        }
        let advice = "set it to a comma-separated list of API keys, or remove 'auth' to serve these endpoints without keys"
        guard let text = self.environment[variable] else {
            throw variableValue.error("'auth' reads API keys from the environment variable \(variable), which is not set; \(advice)")
        }
        let keys = EndpointAuth.keys(in: text)
        guard let set = APIKeySet(keys: keys) else {
            throw variableValue.error("'auth' reads API keys from the environment variable \(variable), which is empty; \(advice)")
        }
        for (index, key) in keys.enumerated() where !EndpointAuth.isUsableKey(key) {
            throw variableValue.error(
                "key \(index + 1) of \(keys.count) in the environment variable \(variable) holds a blank, control or non-ASCII "
                    + "character; API keys must be visible ASCII characters other than commas")
        }
        return (EndpointAuth(environmentVariable: variable, methods: methods, keyCount: set.count), set)
    }

    /// The `methods` of `auth`, sorted by name; every method when absent.
    private func authMethods(_ methodsValue: YAMLValue?) throws(ConfigurationError) -> [HTTPRequest.Method] {
        var methods = EndpointAuth.allMethods
        if let methodsValue {
            let items = try methodsValue.scalarOrSequence("'methods'")
            let known = EndpointAuth.allMethods.map(\.rawValue).joined(separator: ", ")
            methods = []
            for item in items {
                let name = try item.nonEmptyString("an entry of 'methods'").trimmedBlanks
                if name.uppercased() == "HEAD" {
                    throw item.error("HEAD is served by the GET endpoint and needs a key when GET does; list GET instead")
                }
                guard let method = Self.methods[name.lowercased()] else {
                    throw item.error("unknown method '\(name)' in 'methods' (known: \(known))")
                }
                if !methods.contains(method) { methods.append(method) }
            }
            guard !methods.isEmpty else {
                throw methodsValue.error("'methods' must list at least one method; remove 'auth' to leave the endpoints open")
            }
        }
        return methods.sorted { $0.rawValue < $1.rawValue }
    }

    // MARK: Paths

    private func checkPath(_ path: String, at key: YAMLValue) throws(ConfigurationError) {
        guard path.hasPrefix("/") else { throw key.error("path '\(path)' must start with '/'") }
        guard !path.contains("?") && !path.contains("#") else {
            throw key.error("path '\(path)' must not hold a query string or fragment")
        }
        var seen: Set<String> = []
        for segment in EndpointPath.segments(of: path) {
            if segment.contains("{") || segment.contains("}") {
                guard EndpointPath.isKey(segment) else {
                    throw key.error("path '\(path)': a key must be a whole segment like {name}, not '\(segment)'")
                }
                let name = String(segment.dropFirst().dropLast())
                guard Self.isIdentifier(name) else {
                    throw key.error("path '\(path)': key '\(name)' must be letters, digits and underscores")
                }
                guard seen.insert(name).inserted else { throw key.error("path '\(path)' uses key '\(name)' twice") }
            }
        }
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic) else {
            return false
        }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
    }

    // MARK: Endpoints

    /// One method of a path: its keys read and checked in order (result, read-only,
    /// parameters, details, limits, consistency, location, then the SQL's parameters), so the
    /// first mistake in a file is the one reported.
    private func endpoint(
        method: HTTPRequest.Method, path: String, value: YAMLValue, key: YAMLValue, tag: String, claimsAllowed: Bool
    ) throws(ConfigurationError) -> Endpoint {
        let title = "\(method) \(path)"
        let fields = try value.mapping(title, allowed: Self.endpointKeys)
        let summary = try fields.value("description")?.string("'description'")
        let sql = try self.sql(in: fields, owner: value, what: title)
        let result = try self.result(in: fields, method: method)
        let readOnly = try self.readOnly(in: fields, method: method)
        let pathKeys = EndpointPath.keys(of: path)
        var parameters = try self.declaredParameters(in: fields, pathKeys: pathKeys)
        let labels = SQLLabels.labels(of: sql.text(for: .postgres))
        let (details, detailsParameter) = try self.details(
            in: fields, result: result, title: title, columns: labels.labels, parameters: &parameters)
        let (timeout, rowLimit) = try self.limits(in: fields, result: result)
        let consistency = try self.consistency(in: fields, readOnly: readOnly)
        let unknownParameters = try self.unknownParameters(in: fields)
        let location = try self.location(
            in: fields, endpoint: value, result: result, parameters: parameters, labels: labels, title: title)
        let body = try self.body(in: fields, method: method, parameters: parameters, pathKeys: pathKeys)
        let mediaTypeParameter = try self.mediaTypeParameter(in: fields, body: body, pathKeys: pathKeys, parameters: &parameters)
        let mediaTypeColumn = try self.mediaTypeColumn(in: fields, result: result, labels: labels)
        var maxBodyBytes: Int?
        if let limitValue = fields.value("maxBodyBytes") {
            guard method.sendsArgumentsInBody else {
                throw limitValue.error("'maxBodyBytes' limits the request body of a POST, PUT or PATCH; \(method) has none")
            }
            maxBodyBytes = try limitValue.integer("'maxBodyBytes'", in: 0...Int(Int32.max))
        }
        let bulk = try self.bulk(in: fields, method: method, readOnly: readOnly, body: body)
        let mediaType = try self.mediaType(in: fields, endpoint: value, result: result, body: body, typeColumn: mediaTypeColumn)
        let page = try self.page(in: fields, method: method, result: result, sql: sql, labels: labels, parameters: &parameters)
        let sync = try self.sync(in: fields, method: method, result: result, labels: labels, parameters: &parameters)
        if sync != nil, rowLimit != nil, let syncValue = fields.value("sync") {
            throw syncValue.error("'sync' and 'rowLimit' do not go together: a result cut short cannot be kept in step")
        }
        let cache = try self.cache(in: fields, method: method)
        let versionSQL = try self.versionSQL(in: fields, owner: value, method: method, result: result, title: title)

        // SQL parameters
        var ownParameters: Set<String> = page == nil ? [] : [EndpointPage.sizeParameter, EndpointPage.afterParameter]
        if sync != nil { ownParameters.insert(EndpointSync.sinceParameter) }
        let declared = Set(parameters.map(\.name)).subtracting(ownParameters)
        let lists = Set(parameters.filter(\.type.isList).map(\.name))
        try self.checkParameters(
            of: sql, allowed: { _ in declared }, lists: lists, owner: title, detail: nil, claimsAllowed: claimsAllowed)
        try self.checkOptionalClauses(of: sql)
        if let versionSQL {
            try self.checkParameters(
                of: versionSQL, allowed: { _ in declared }, lists: lists, owner: "versionSql of \(title)", detail: nil,
                claimsAllowed: claimsAllowed)
        }
        try self.checkDetailParameters(
            details, parentSQL: sql, declared: declared, lists: lists, owner: title, path: "", claimsAllowed: claimsAllowed)

        var endpoint = Endpoint(
            method: method, path: path, summary: summary, sql: sql, parameters: parameters, result: result,
            details: details, detailsParameter: detailsParameter, timeout: timeout, rowLimit: rowLimit,
            readOnly: readOnly, location: location, tag: tag, file: value.file, line: key.line,
            labels: labels.labels, labelsComplete: labels.complete)
        endpoint.consistency = consistency
        endpoint.unknownParameters = unknownParameters
        endpoint.page = page
        endpoint.sync = sync
        endpoint.cache = cache
        endpoint.versionSQL = versionSQL
        endpoint.mediaType = mediaType
        endpoint.body = body
        endpoint.mediaTypeParameter = mediaTypeParameter
        endpoint.mediaTypeColumn = mediaTypeColumn
        endpoint.maxBodyBytes = maxBodyBytes
        endpoint.bulk = bulk
        return endpoint
    }

    /// `bulk: true`: a POST that writes also takes many records at `<path>/bulk` (not an
    /// upload's, whose body is one parameter).
    private func bulk(in fields: YAMLMapping, method: HTTPRequest.Method, readOnly: Bool, body: String?) throws(ConfigurationError) -> Bool {
        guard let bulkValue = fields.value("bulk") else { return false }
        let bulk = try bulkValue.boolean("'bulk'")
        guard bulk else { return false }
        guard method == .post, !readOnly else {
            throw bulkValue.error("'bulk' takes many records in one request to a POST endpoint that writes")
        }
        guard body == nil else { throw bulkValue.error("'bulk' and 'body' do not go together: an upload's body is one parameter") }
        return true
    }

    /// `page`: keyset pagination of a GET endpoint's rows. The key names result columns (when
    /// the select list can be read), the SQL must be pageable on every dialect (see
    /// `KeysetQuery`), and `pageSize` and `after` become parameters of the endpoint.
    private func page(
        in fields: YAMLMapping, method: HTTPRequest.Method, result: EndpointResult, sql: EndpointSQL,
        labels: SQLLabels.Result, parameters: inout [Parameter]
    ) throws(ConfigurationError) -> EndpointPage? {
        guard let pageValue = fields.value("page") else { return nil }
        guard method == .get, result == .rows else {
            throw pageValue.error("'page' pages the rows of a GET endpoint with result 'rows'")
        }
        let pageFields = try pageValue.mapping("'page'", allowed: Self.pageKeys)
        guard let keyValue = pageFields.value("key") else {
            throw pageValue.error("'page' needs 'key', the result columns that order the pages (like [employeeNumber])")
        }
        let key = try self.keyColumns(keyValue, labels: labels)
        let maxSize = try pageFields.value("maxSize")?.integer("'maxSize'", in: 1...100_000) ?? 1_000
        let size = try pageFields.value("size")?.integer("'size'", in: 1...maxSize) ?? min(100, maxSize)
        for dialect in SQLDialect.allCases {
            do {
                _ = try KeysetQuery(sql.text(for: dialect), key: key)
            } catch {
                throw pageValue.error("this endpoint's SQL cannot be paged: \(error)")
            }
        }
        for parameter in parameters {
            if parameter.name == EndpointPage.sizeParameter || parameter.name == EndpointPage.afterParameter {
                throw pageValue.error(
                    "parameter '\(parameter.name)' belongs to the pages of a paged endpoint; rename the declared one")
            }
            if parameter.name.hasPrefix("spout_") {
                throw pageValue.error("parameter names starting with spout_ are the pages' own; rename '\(parameter.name)'")
            }
        }
        parameters.append(
            Parameter(
                EndpointPage.sizeParameter, .integer,
                summary: "Answer one page of at most this many rows (1 to \(maxSize)), with a Link header to the next page"))
        parameters.append(
            Parameter(
                EndpointPage.afterParameter, .string,
                summary: "Where the page starts: the cursor in the previous page's Link header (opaque)"))
        return EndpointPage(key: key, size: size, maxSize: maxSize)
    }

    /// `sync`: sync reads of a GET endpoint's rows. The key names result columns (when the
    /// select list can be read); each table names as many of its columns as the key has, all
    /// plain identifiers (whether they exist is checked against the database at start); `since`
    /// becomes a parameter of the endpoint.
    private func sync(
        in fields: YAMLMapping, method: HTTPRequest.Method, result: EndpointResult, labels: SQLLabels.Result,
        parameters: inout [Parameter]
    ) throws(ConfigurationError) -> EndpointSync? {
        guard let syncValue = fields.value("sync") else { return nil }
        guard method == .get, result == .rows else {
            throw syncValue.error("'sync' follows the rows of a GET endpoint with result 'rows'")
        }
        let syncFields = try syncValue.mapping("'sync'", allowed: Self.syncKeys)
        guard let keyValue = syncFields.value("key") else {
            throw syncValue.error("'sync' needs 'key', the result columns that identify a row (like [name])")
        }
        let key = try self.keyColumns(keyValue, labels: labels)
        guard let tablesValue = syncFields.value("tables") else {
            throw syncValue.error(
                "'sync' needs 'tables', each table the rows and details come from with its columns holding the key (like {pet: [name]})")
        }
        var tables: [TrackedTable] = []
        var positions: [String: EndpointSync.Position] = [:]
        for entry in try tablesValue.mapping("'tables'").entries {
            let (name, nameValue, columnsValue) = (entry.name, entry.key, entry.value)
            guard TrackedTable.isPlainIdentifier(name) else {
                throw nameValue.error("table '\(name)' must be letters, digits and underscores (a table of the database's schema)")
            }
            var columns: [String] = []
            for item in try columnsValue.scalarOrSequence("the columns of '\(name)'") {
                let column = try item.nonEmptyString("a column of '\(name)'")
                guard TrackedTable.isPlainIdentifier(column) else {
                    throw item.error("column '\(column)' of '\(name)' must be letters, digits and underscores")
                }
                columns.append(column)
            }
            guard columns.count == key.count else {
                throw columnsValue.error(
                    "'\(name)' names \(columns.count) column(s) for a key of \(key.count) (\(key.joined(separator: ", "))): one column of the table per key column, in order")
            }
            tables.append(TrackedTable(name: name, keyColumns: columns))
            positions[name] = EndpointSync.Position(file: nameValue.file, line: nameValue.line, column: nameValue.column)
        }
        guard !tables.isEmpty else { throw tablesValue.error("'tables' must name at least one table") }
        if parameters.contains(where: { $0.name == EndpointSync.sinceParameter }) {
            throw syncValue.error("parameter 'since' carries a sync read's cursor; rename the declared one")
        }
        parameters.append(
            Parameter(
                EndpointSync.sinceParameter, .string,
                summary: "Answer what changed since this cursor (from the last sync read; 0: the whole result), keys to forget included"))
        return EndpointSync(key: key, tables: tables, positions: positions)
    }

    /// The result columns a `key` (of `page` or `sync`) names: at least one, none twice, each
    /// a column of the result when the select list can be read.
    private func keyColumns(_ keyValue: YAMLValue, labels: SQLLabels.Result) throws(ConfigurationError) -> [String] {
        var key: [String] = []
        for item in try keyValue.scalarOrSequence("'key'") {
            let column = try item.nonEmptyString("a key column")
            if key.contains(column) { throw item.error("key column '\(column)' is listed twice") }
            if labels.complete && !labels.labels.contains(column) {
                throw item.error(
                    "key column '\(column)' is not a column of the result (its columns: \(labels.labels.joined(separator: ", ")))")
            }
            key.append(column)
        }
        guard !key.isEmpty else { throw keyValue.error("'key' must name at least one result column") }
        return key
    }

    /// `cache`: the `Cache-Control` of a GET endpoint.
    private func cache(in fields: YAMLMapping, method: HTTPRequest.Method) throws(ConfigurationError) -> EndpointCache? {
        guard let cacheValue = fields.value("cache") else { return nil }
        guard method == .get else { throw cacheValue.error("'cache' is for GET endpoints; responses to writes are not cached") }
        let cacheFields = try cacheValue.mapping("'cache'", allowed: Self.cacheKeys)
        guard let maxAgeValue = cacheFields.value("maxAge") else {
            throw cacheValue.error("'cache' needs 'maxAge', the seconds a response stays fresh")
        }
        let maxAge = try maxAgeValue.integer("'maxAge'", in: 0...31_536_000)
        let isPublic = try cacheFields.value("public")?.boolean("'public'") ?? false
        return EndpointCache(maxAge: maxAge, isPublic: isPublic)
    }

    /// `versionSql` or `versionSqlFile`: the version of a GET endpoint's streamed rows, or of an
    /// object that streams (one whose details have details, when they are selected).
    private func versionSQL(
        in fields: YAMLMapping, owner: YAMLValue, method: HTTPRequest.Method, result: EndpointResult, title: String
    ) throws(ConfigurationError) -> EndpointSQL? {
        guard let node = fields.value("versionSql") ?? fields.value("versionSqlFile") else { return nil }
        guard method == .get, result == .rows || result == .object else {
            throw node.error(
                "'versionSql' tags the streamed rows or object of a GET endpoint; results sent whole are tagged by their body")
        }
        return try self.sql(in: fields, owner: owner, what: "versionSql of \(title)", inlineKey: "versionSql", fileKey: "versionSqlFile")
    }

    /// `result`, `rows` when absent; `created` only for POST and PUT, `none` never for GET,
    /// `bytes` only for GET.
    private func result(in fields: YAMLMapping, method: HTTPRequest.Method) throws(ConfigurationError) -> EndpointResult {
        var result = EndpointResult.rows
        if let resultValue = fields.value("result") {
            let text = try resultValue.string("'result'")
            guard let parsed = EndpointResult(rawValue: text) else {
                let known = EndpointResult.allCases.map(\.rawValue).joined(separator: ", ")
                throw resultValue.error("unknown result '\(text)' (known: \(known))")
            }
            result = parsed
        }
        if result == .created && method != .post && method != .put {
            throw fields["result"]!.error("result 'created' is for POST and PUT endpoints, not \(method)")
        }
        if result == .none && method == .get {
            throw fields["result"]!.error("result 'none' answers 204 after a write; a GET endpoint cannot use it")
        }
        if result == .bytes && method != .get {
            throw fields["result"]!.error("result 'bytes' answers a GET with a stored file; \(method) cannot use it")
        }
        return result
    }

    /// `readOnly`: true for GET (which cannot say otherwise), false for the other methods.
    private func readOnly(in fields: YAMLMapping, method: HTTPRequest.Method) throws(ConfigurationError) -> Bool {
        guard let readOnlyValue = fields.value("readOnly") else { return method == .get }
        let readOnly = try readOnlyValue.boolean("'readOnly'")
        if method == .get && !readOnly {
            throw readOnlyValue.error("a GET endpoint is always read-only; use POST, PUT, PATCH or DELETE to write")
        }
        return readOnly
    }

    /// The declared parameters, each once, with the path keys not declared added first (as
    /// required strings).
    private func declaredParameters(in fields: YAMLMapping, pathKeys: [String]) throws(ConfigurationError) -> [Parameter] {
        var parameters: [Parameter] = []
        if let declared = fields.value("parameters") {
            for declaration in try self.parameterDeclarations(declared) {
                let parameter = try self.parameter(declaration, pathKeys: pathKeys)
                if parameters.contains(where: { $0.name == parameter.name }) {
                    throw declaration.node.error("parameter '\(parameter.name)' is declared twice")
                }
                parameters.append(parameter)
            }
        }
        for pathKey in pathKeys.reversed() where !parameters.contains(where: { $0.name == pathKey }) {
            parameters.insert(Parameter(pathKey, .string, required: true), at: 0)
        }
        return parameters
    }

    /// `details` and `detailsParameter`: the details, each once and never named like one of the
    /// endpoint's `columns`, and the parameter that selects them, appended to `parameters`.
    private func details(
        in fields: YAMLMapping, result: EndpointResult, title: String, columns: [String], parameters: inout [Parameter]
    ) throws(ConfigurationError) -> (details: [EndpointDetail], parameter: String?) {
        guard let list = fields.value("details") else {
            if let nameValue = fields.value("detailsParameter") {
                throw nameValue.error("'detailsParameter' names the parameter that selects details; this endpoint has none")
            }
            return ([], nil)
        }
        guard result == .rows || result == .object else {
            throw list.error("details attach arrays to rows; result '\(result.rawValue)' has none")
        }
        let details = try self.detailList(list, owner: title, columns: columns, depth: 1)
        let nameValue = fields.value("detailsParameter")
        let name = try nameValue?.nonEmptyString("'detailsParameter'") ?? "details"
        guard Self.isIdentifier(name) else {
            throw (nameValue ?? list).error("the details parameter '\(name)' must be letters, digits and underscores")
        }
        if parameters.contains(where: { $0.name == name }) {
            throw (nameValue ?? list).error(
                "parameter '\(name)' selects the details; it cannot also be declared (rename it with 'detailsParameter')")
        }
        parameters.append(
            Parameter(
                name, .list(.string), allowedValues: EndpointDetail.paths(of: details).map { .text($0) },
                summary: "Arrays to attach to each row: " + EndpointDetail.paths(of: details).joined(separator: ", ")))
        return (details, name)
    }

    /// `timeoutMs` and `rowLimit` (for result `rows` only).
    private func limits(in fields: YAMLMapping, result: EndpointResult) throws(ConfigurationError) -> (timeout: Duration?, rowLimit: Int?) {
        var timeout: Duration?
        if let timeoutValue = fields.value("timeoutMs") {
            timeout = .milliseconds(try timeoutValue.integer("'timeoutMs'", in: 1...86_400_000))
        }
        var rowLimit: Int?
        if let limitValue = fields.value("rowLimit") {
            guard result == .rows else { throw limitValue.error("'rowLimit' applies to result 'rows' only") }
            rowLimit = try limitValue.integer("'rowLimit'", in: 1...Int.max)
        }
        return (timeout, rowLimit)
    }

    /// `consistency`, for read-only endpoints only; `replica` when absent.
    private func consistency(in fields: YAMLMapping, readOnly: Bool) throws(ConfigurationError) -> Consistency {
        guard let consistencyValue = fields.value("consistency") else { return .replica }
        let text = try consistencyValue.string("'consistency'")
        guard let parsed = Consistency(rawValue: text) else {
            let known = Consistency.allCases.map(\.rawValue).joined(separator: ", ")
            throw consistencyValue.error("unknown consistency '\(text)' (known: \(known))")
        }
        guard readOnly else {
            throw consistencyValue.error("'consistency' is for read-only endpoints; writes always run on the primary")
        }
        return parsed
    }

    /// `unknownParameters`: `refuse` (the default) or `ignore`.
    private func unknownParameters(in fields: YAMLMapping) throws(ConfigurationError) -> UnknownParameters {
        guard let value = fields.value("unknownParameters") else { return .refuse }
        let text = try value.string("'unknownParameters'")
        guard let parsed = UnknownParameters(rawValue: text) else {
            let known = UnknownParameters.allCases.map(\.rawValue).joined(separator: ", ")
            throw value.error("unknown value '\(text)' of 'unknownParameters' (known: \(known))")
        }
        return parsed
    }

    /// `body`: the parameter a POST, PUT or PATCH takes the whole request body as (an upload):
    /// a declared `bytes` or `string` parameter of one value, not a path key.
    private func body(
        in fields: YAMLMapping, method: HTTPRequest.Method, parameters: [Parameter], pathKeys: [String]
    ) throws(ConfigurationError) -> String? {
        guard let bodyValue = fields.value("body") else { return nil }
        guard method.sendsArgumentsInBody else {
            throw bodyValue.error("'body' takes the request body of a POST, PUT or PATCH as a parameter; \(method) has no body")
        }
        let name = try bodyValue.nonEmptyString("'body'")
        guard let parameter = parameters.first(where: { $0.name == name }), !pathKeys.contains(name) else {
            throw bodyValue.error("'body' names the parameter that receives the request body; declare '\(name)' (type bytes) under 'parameters'")
        }
        guard parameter.type == .bytes || parameter.type == .string else {
            throw bodyValue.error("the body parameter '\(name)' must be of type bytes (a file as it is) or string (text), not \(parameter.type)")
        }
        return name
    }

    /// `mediaTypeParameter`: with a `body`, the parameter that receives its media type; a
    /// `string` of one value, neither a path key nor the body, added when not declared.
    private func mediaTypeParameter(
        in fields: YAMLMapping, body: String?, pathKeys: [String], parameters: inout [Parameter]
    ) throws(ConfigurationError) -> String? {
        guard let nameValue = fields.value("mediaTypeParameter") else { return nil }
        guard body != nil else {
            throw nameValue.error("'mediaTypeParameter' receives the media type of an upload's 'body'; this endpoint has none")
        }
        let name = try nameValue.nonEmptyString("'mediaTypeParameter'")
        guard Self.isIdentifier(name), name != body, !pathKeys.contains(name) else {
            throw nameValue.error("'mediaTypeParameter' must name a parameter of its own (letters, digits, _), not the body or a path key: '\(name)'")
        }
        if let declared = parameters.first(where: { $0.name == name }) {
            guard declared.type == .string else {
                throw nameValue.error("the media type parameter '\(name)' is text: declare it type string, not \(declared.type)")
            }
        } else {
            parameters.append(Parameter(name, .string, summary: "The media type of the request body (set from its Content-Type)"))
        }
        return name
    }

    /// `mediaTypeColumn`: for result `bytes`, the column label holding each file's type; one
    /// of the select list's labels (when they can be read), not the file's own (the first).
    private func mediaTypeColumn(
        in fields: YAMLMapping, result: EndpointResult, labels: SQLLabels.Result
    ) throws(ConfigurationError) -> String? {
        guard let columnValue = fields.value("mediaTypeColumn") else { return nil }
        guard result == .bytes else { throw columnValue.error("'mediaTypeColumn' is for result 'bytes' only") }
        let column = try columnValue.nonEmptyString("'mediaTypeColumn'")
        if labels.complete && !labels.labels.dropFirst().contains(column) {
            let known = labels.labels.dropFirst().joined(separator: ", ")
            throw columnValue.error(
                "'mediaTypeColumn' names a column after the file (the first) in the select list; '\(column)' is not one of them (\(known.isEmpty ? "none" : known))")
        }
        return column
    }

    /// `mediaType`: required by result `bytes`, the `Content-Type` it answers with (with a
    /// `mediaTypeColumn`, the range the stored types must lie in: `image/*`); for an endpoint
    /// with a `body`, optional, the media type the body must have (`type/*` allowed). Nowhere
    /// else. A `type/subtype` of token characters (`image/png`, `application/pdf`), parameters
    /// after `;` allowed (`text/plain; charset=utf-8`).
    private func mediaType(
        in fields: YAMLMapping, endpoint value: YAMLValue, result: EndpointResult, body: String?, typeColumn: String?
    ) throws(ConfigurationError) -> String? {
        guard let mediaValue = fields.value("mediaType") else {
            if result == .bytes {
                throw value.error("result 'bytes' needs 'mediaType', the Content-Type of the body (like image/png)")
            }
            return nil
        }
        guard result == .bytes || body != nil else {
            throw mediaValue.error("'mediaType' is for result 'bytes' (the type served) or a 'body' (the type accepted) only")
        }
        let text = try mediaValue.nonEmptyString("'mediaType'")
        guard Self.isMediaType(text) else {
            throw mediaValue.error("'mediaType' must be a media type like image/png, not '\(text)'")
        }
        if result == .bytes && typeColumn == nil && MediaType.essence(of: text).contains("*") {
            throw mediaValue.error(
                "'mediaType' of result 'bytes' is the Content-Type sent: one type like image/png, not '\(text)' (or store each file's type and name its column in 'mediaTypeColumn')")
        }
        return text
    }

    /// Whether `text` is `type/subtype` of RFC 9110 token characters, then optional
    /// `; name=value` parameters of printable ASCII.
    static func isMediaType(_ text: String) -> Bool {
        let essence = text.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
        let parts = essence[0].split(separator: "/", omittingEmptySubsequences: false)
        let tokenCharacters = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(tokenCharacters.contains) }) else { return false }
        return essence.count == 1 || essence[1].unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }
    }

    /// `location`: required by result `created` and only allowed there; each `{placeholder}`
    /// must be a parameter or a column of the row the statement returns (`RETURNING id`).
    private func location(
        in fields: YAMLMapping, endpoint value: YAMLValue, result: EndpointResult, parameters: [Parameter],
        labels: SQLLabels.Result, title: String
    ) throws(ConfigurationError) -> String? {
        guard let locationValue = fields.value("location") else {
            if result == .created {
                throw value.error("result 'created' needs 'location', the path of the new resource (like /pets/{name})")
            }
            return nil
        }
        guard result == .created else { throw locationValue.error("'location' is for result 'created' only") }
        let template = try locationValue.nonEmptyString("'location'")
        for name in LocationTemplate.placeholders(in: template)
        where !parameters.contains(where: { $0.name == name }) && !labels.labels.contains(name) {
            let columns =
                labels.complete
                ? "its columns: \(labels.labels.isEmpty ? "none" : labels.labels.joined(separator: ", "))"
                : "name the column in the statement's RETURNING list (RETURNING id, or id AS \"bookId\"), not *"
            throw locationValue.error(
                "'location' uses {\(name)}, which is neither a parameter of \(title) nor a column the statement returns (\(columns))")
        }
        return template
    }

    // MARK: Parameters

    /// One parameter as written in either form of `parameters`: its name, the node that holds
    /// the name (for errors about it), its fields and the node errors about the whole
    /// declaration point at.
    struct ParameterDeclaration {
        var name: String
        var nameNode: YAMLValue
        var fields: YAMLMapping
        var node: YAMLValue
    }

    /// The declarations of `parameters` in file order. Two forms are accepted: a list of
    /// mappings that each hold a `name` (`- {name: id, type: integer}`), and a mapping from
    /// names to the same mappings without `name` (`id: {type: integer}`; an empty value takes
    /// every default). Anything else is an error naming both forms.
    private func parameterDeclarations(_ value: YAMLValue) throws(ConfigurationError) -> [ParameterDeclaration] {
        var declarations: [ParameterDeclaration] = []
        switch value.node {
        case .sequence:
            for item in try value.sequence("'parameters'") {
                let fields = try item.mapping("a parameter", allowed: Self.parameterKeys)
                guard let nameValue = fields.value("name") else { throw item.error("a parameter needs a 'name'") }
                let name = try nameValue.nonEmptyString("a parameter's 'name'")
                declarations.append(ParameterDeclaration(name: name, nameNode: nameValue, fields: fields, node: item))
            }
        case .mapping:
            for entry in try value.mapping("'parameters'").entries {
                let what = "parameter '\(entry.name)'"
                if case .mapping = entry.value.node,
                    let nameKey = try entry.value.mapping(what).entries.first(where: { $0.name == "name" })?.key
                {
                    throw nameKey.error("\(what) is named by its key in the mapping form of 'parameters'; remove 'name'")
                }
                let fields = entry.value.isNull
                    ? YAMLMapping(owner: entry.value, entries: [])
                    : try entry.value.mapping(what, allowed: Self.parameterKeys.filter { $0 != "name" })
                declarations.append(ParameterDeclaration(name: entry.name, nameNode: entry.key, fields: fields, node: entry.key))
            }
        default:
            throw value.error(
                "'parameters' must be a list of parameters (- {name: id, type: integer}) "
                    + "or a mapping from parameter names to their keys (id: {type: integer})")
        }
        return declarations
    }

    private func parameter(_ declaration: ParameterDeclaration, pathKeys: [String]) throws(ConfigurationError) -> Parameter {
        let fields = declaration.fields
        let value = declaration.node
        let nameValue = declaration.nameNode
        let name = declaration.name
        guard Self.isIdentifier(name) else {
            throw nameValue.error("parameter name '\(name)' must be letters, digits and underscores (it is used as :\(name) in SQL)")
        }
        var type = ParameterType.string
        if let typeValue = fields.value("type") {
            type = try self.type(typeValue)
        }
        let isPathKey = pathKeys.contains(name)
        var required = isPathKey
        if let requiredValue = fields.value("required") {
            required = try requiredValue.boolean("'required'")
            if isPathKey && !required {
                throw requiredValue.error("parameter '\(name)' is a path key, which is always required")
            }
        }
        if isPathKey && type.isList {
            throw (fields["type"] ?? value).error("path key '\(name)' holds one value; it cannot be a list")
        }
        let limits = try self.limits(of: name, type: type, in: fields)
        var allowedValues: [SQLValue]?
        if let allowedValue = fields.value("allowedValues") {
            if type.elementType == .bytes { throw allowedValue.error("'allowedValues' does not apply to bytes parameters ('\(name)')") }
            var values: [SQLValue] = []
            for item in try allowedValue.sequence("'allowedValues'") {
                values.append(try self.convert(item, as: type.elementType, what: "allowed value", limits: limits))
            }
            guard !values.isEmpty else { throw allowedValue.error("'allowedValues' must list at least one value") }
            allowedValues = values
        }
        var defaultValue: SQLValue?
        if let defaultNode = fields.value("default") {
            if required { throw defaultNode.error("parameter '\(name)' is required, so a default would never be used") }
            if type.isList {
                let items = try defaultNode.scalarOrSequence("'default'")
                var values: [SQLValue] = []
                for item in items { values.append(try self.convert(item, as: type.elementType, what: "default", limits: limits)) }
                defaultValue = .array(values)
            } else {
                defaultValue = try self.convert(defaultNode, as: type, what: "default", limits: limits)
            }
            if let allowedValues, let defaultValue {
                let candidates: [SQLValue] = { if case .array(let items) = defaultValue { return items }; return [defaultValue] }()
                for candidate in candidates where !allowedValues.contains(candidate) {
                    throw defaultNode.error("the default of '\(name)' is not one of its allowed values")
                }
            }
        }
        let summary = try fields.value("description")?.string("'description'")
        return Parameter(
            name, type, required: required, defaultValue: defaultValue, allowedValues: allowedValues, limits: limits, summary: summary)
    }

    /// `minimum` and `maximum` (for an `integer` or `number` parameter, converted with its
    /// type) and `minLength` and `maxLength` (for a `string`), each least not above its most.
    private func limits(of name: String, type: ParameterType, in fields: YAMLMapping) throws(ConfigurationError) -> ParameterLimits {
        var limits = ParameterLimits()
        let element = type.elementType
        for key in ["minimum", "maximum"] {
            guard let node = fields.value(key) else { continue }
            guard element == .integer || element == .number else {
                throw node.error("'\(key)' applies to integer and number parameters; '\(name)' is of type \(type)")
            }
            let bound = try self.convert(node, as: element, what: "'\(key)'")
            if key == "minimum" { limits.minimum = bound } else { limits.maximum = bound }
        }
        for key in ["minLength", "maxLength"] {
            guard let node = fields.value(key) else { continue }
            guard element == .string else {
                throw node.error("'\(key)' applies to string parameters; '\(name)' is of type \(type)")
            }
            let bound = try node.integer("'\(key)'", in: 0...Int(Int32.max))
            if key == "minLength" { limits.minLength = bound } else { limits.maxLength = bound }
        }
        let emptyRange: Bool
        switch (limits.minimum, limits.maximum) {
        case (.integer(let least)?, .integer(let most)?): emptyRange = least > most
        case (.double(let least)?, .double(let most)?): emptyRange = least > most
        default: emptyRange = false
        }
        if emptyRange { throw (fields["maximum"] ?? fields.owner).error("'minimum' of '\(name)' is above its 'maximum'") }
        if let least = limits.minLength, let most = limits.maxLength, least > most {
            throw (fields["maxLength"] ?? fields.owner).error("'minLength' of '\(name)' is above its 'maxLength'")
        }
        return limits
    }

    private func type(_ value: YAMLValue) throws(ConfigurationError) -> ParameterType {
        let text = try value.string("'type'").trimmedBlanks
        let known = (Self.typeNames + Self.typeNames.map { "list of \($0)" }).joined(separator: ", ")
        var words = text.split(separator: " ").map(String.init)
        var isList = false
        if words.count == 3 && words[0] == "list" && words[1] == "of" {
            isList = true
            words.removeFirst(2)
        }
        guard words.count == 1, let element = Self.scalarType(words[0]) else {
            throw value.error("unknown type '\(text)' (known: \(known))")
        }
        return isList ? .list(element) : element
    }

    private static func scalarType(_ name: String) -> ParameterType? {
        switch name {
        case "string": return .string
        case "integer": return .integer
        case "number": return .number
        case "decimal": return .decimal
        case "boolean": return .boolean
        case "date": return .date
        case "datetime": return .datetime
        case "bytes": return .bytes
        default: return nil
        }
    }

    private func convert(
        _ value: YAMLValue, as type: ParameterType, what: String, limits: ParameterLimits = ParameterLimits()
    ) throws(ConfigurationError) -> SQLValue {
        guard let text = value.scalarText, !value.isNull else { throw value.error("a \(what) must be a single value") }
        guard let converted = type.convert(text) else { throw value.error("\(what) '\(text)' is not a valid \(type)") }
        if let outOfRange = type.rangeError(for: converted) ?? limits.violation(by: converted) {
            throw value.error("\(what) '\(text)': \(outOfRange)")
        }
        return converted
    }

    // MARK: Details

    /// A `details` list at `depth` (1 for an endpoint's own): each detail once, never named
    /// like one of its parent's `columns`, never deeper than ``maxDetailDepth``.
    private func detailList(
        _ list: YAMLValue, owner: String, columns: [String], depth: Int
    ) throws(ConfigurationError) -> [EndpointDetail] {
        guard depth <= self.maxDetailDepth else {
            throw list.error(
                "details nest \(depth) levels deep here; maxDetailDepth allows \(self.maxDetailDepth) (see docs/configuration.md)")
        }
        var details: [EndpointDetail] = []
        for item in try list.sequence("'details'") {
            let detail = try self.detail(item, owner: owner, depth: depth)
            if details.contains(where: { $0.name == detail.name }) {
                throw item.error("detail '\(detail.name)' is declared twice")
            }
            if columns.contains(detail.name) {
                throw item.error("detail '\(detail.name)' has the name of a column of \(owner); rename one of them")
            }
            details.append(detail)
        }
        return details
    }

    private func detail(_ value: YAMLValue, owner: String, depth: Int) throws(ConfigurationError) -> EndpointDetail {
        let fields = try value.mapping("a detail", allowed: Self.detailKeys)
        guard let nameValue = fields.value("name") else { throw value.error("a detail needs a 'name'") }
        let name = try nameValue.nonEmptyString("a detail's 'name'")
        guard !name.contains(EndpointDetail.pathSeparator) else {
            throw nameValue.error("a detail's 'name' cannot hold '.' (it separates the levels of a detail path)")
        }
        let sql = try self.sql(in: fields, owner: value, what: "detail '\(name)' of \(owner)")
        let summary = try fields.value("description")?.string("'description'")
        let labels = SQLLabels.labels(of: sql.text(for: .postgres)).labels
        var details: [EndpointDetail] = []
        if let list = fields.value("details") {
            details = try self.detailList(list, owner: "detail '\(name)' of \(owner)", columns: labels, depth: depth + 1)
        }
        return EndpointDetail(name: name, sql: sql, summary: summary, labels: labels, details: details)
    }

    /// Checks the parameters of `details` and of their details: each binds from its parent's
    /// labels (`parentSQL`'s, on each dialect) or from the endpoint's `declared` parameters.
    private func checkDetailParameters(
        _ details: [EndpointDetail], parentSQL: EndpointSQL, declared: Set<String>, lists: Set<String>, owner: String, path: String,
        claimsAllowed: Bool
    ) throws(ConfigurationError) {
        for detail in details {
            let detailPath = path + detail.name
            try self.checkParameters(
                of: detail.sql,
                allowed: { dialect in
                    let parent = SQLLabels.labels(of: parentSQL.text(for: dialect))
                    // A parent without a select list (`SELEC`) is for the database to report at
                    // start, in its own words: its details' names are not judged against it.
                    guard parent.found else {
                        return declared.union((try? ParsedSQL(detail.sql.text(for: dialect), dialect: dialect))?.parameterNames ?? [])
                    }
                    return declared.union(parent.labels)
                },
                lists: lists, owner: owner, detail: detailPath, claimsAllowed: claimsAllowed)
            try self.checkDetailParameters(
                detail.details, parentSQL: detail.sql, declared: declared, lists: lists, owner: owner,
                path: detailPath + String(EndpointDetail.pathSeparator), claimsAllowed: claimsAllowed)
        }
    }

    // MARK: SQL

    private func sql(
        in fields: YAMLMapping, owner: YAMLValue, what: String, inlineKey: String = "sql", fileKey: String = "sqlFile"
    ) throws(ConfigurationError) -> EndpointSQL {
        let inline = fields.value(inlineKey)
        let fileValue = fields.value(fileKey)
        switch (inline, fileValue) {
        case (nil, nil):
            throw owner.error("\(what) needs '\(inlineKey)' (inline) or '\(fileKey)' (a file under the SQL directory)")
        case (.some, .some):
            throw fileValue!.error("\(what) has both '\(inlineKey)' and '\(fileKey)'; keep one")
        case (let inline?, nil):
            let text = try inline.nonEmptyString("'\(inlineKey)'")
            return EndpointSQL(
                portable: text, file: inline.file, firstLine: (inline.line ?? 1) + (inline.isBlockScalar ? 1 : 0))
        case (nil, let fileValue?):
            let relative = try fileValue.nonEmptyString("'\(fileKey)'")
            let components = relative.split(separator: "/")
            guard !relative.hasPrefix("/"), !components.contains("..") else {
                throw fileValue.error("'\(fileKey)' must be a path inside the SQL directory, not '\(relative)'")
            }
            let path = SpoutConfiguration.resolve(relative, against: self.sqlDirectory)
            guard let portable = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw fileValue.error("SQL file '\(relative)' not found (looked for \(path))")
            }
            var sql = EndpointSQL(portable: portable, file: path)
            for dialect in SQLDialect.allCases {
                let overridePath = SpoutConfiguration.resolve(dialect.rawValue + "/" + relative, against: self.sqlDirectory)
                if FileManager.default.fileExists(atPath: overridePath) {
                    guard let text = try? String(contentsOfFile: overridePath, encoding: .utf8) else {
                        throw fileValue.error("cannot read the \(dialect) override \(overridePath)")
                    }
                    sql.overrides[dialect] = text
                    sql.overrideFiles[dialect] = overridePath
                }
            }
            return sql
        }
    }

    /// Checks that the optional clauses of an endpoint's `sql` (``OptionalClauses``) can be
    /// reduced on every dialect; an error points into the SQL text (its file and line).
    private func checkOptionalClauses(of sql: EndpointSQL) throws(ConfigurationError) {
        for dialect in SQLDialect.allCases {
            do {
                _ = try OptionalClauses(sql.text(for: dialect))
            } catch {
                let file = sql.overrideFiles[dialect] ?? sql.file
                let firstLine = sql.overrides[dialect] == nil ? sql.firstLine : 1
                throw ConfigurationError(
                    file: file, line: firstLine + error.line - 1, column: error.column, message: "optional clause: \(error.reason)")
            }
        }
    }

    /// Checks that `sql` parses for every dialect and that each of its parameters is in
    /// `allowed(dialect)` or, with `claimsAllowed` (the endpoint needs a verified token), is a
    /// claim (`:claims.sub`), and that no parameter of `lists` (the endpoint's list parameters)
    /// stands alone in `IN (...)` (``ListInClause``); errors point into the SQL text (its file
    /// and line).
    private func checkParameters(
        of sql: EndpointSQL, allowed: (SQLDialect) -> Set<String>, lists: Set<String>, owner: String, detail: String?,
        claimsAllowed: Bool
    ) throws(ConfigurationError) {
        for dialect in SQLDialect.allCases {
            let text = sql.text(for: dialect)
            let file = sql.overrideFiles[dialect] ?? sql.file
            let firstLine = sql.overrides[dialect] == nil ? sql.firstLine : 1
            let parsed: ParsedSQL
            do {
                parsed = try ParsedSQL(text, dialect: dialect)
            } catch let error as SQLSyntaxError {
                throw ConfigurationError(
                    file: file, line: firstLine + error.line - 1, column: error.column, message: "invalid SQL: \(error.reason)")
            } catch {
                throw ConfigurationError(file: file, line: firstLine, message: "invalid SQL: \(error)")
            }
            let names = allowed(dialect)
            var line = firstLine
            for (index, segment) in parsed.segments.enumerated() {
                if case .parameter(let name) = segment, lists.contains(name),
                    ListInClause.isAlone(in: parsed.segments, at: index)
                {
                    throw ConfigurationError(file: file, line: line, message: ListInClause.message(parameter: name))
                }
                switch segment {
                case .sql(let piece):
                    line += piece.utf8.count(where: { $0 == 0x0A })
                case .parameter(let name) where RequestIdentity.claimPath(of: name) != nil && !claimsAllowed:
                    throw ConfigurationError(
                        file: file, line: line,
                        message: "parameter :\(name) is a token claim, but \(owner) takes no token; cover it with "
                            + "'auth: {token: jwt}' in its endpoint file or under the endpoint")
                case .parameter(let name) where !names.contains(name) && RequestIdentity.claimPath(of: name) == nil:
                    let message: String
                    if let detail {
                        message =
                            "parameter :\(name) of detail '\(detail)' is neither a parameter of \(owner) nor a column label "
                            + "found in its SQL (known names: \(names.sorted().joined(separator: ", ")))"
                    } else {
                        message = "parameter :\(name) is not declared; add it to 'parameters' of \(owner)"
                    }
                    throw ConfigurationError(file: file, line: line, message: message)
                case .parameter:
                    break
                }
            }
        }
    }
}

/// `Location` templates: `/pets/{name}` filled with percent-encoded arguments.
enum LocationTemplate {
    static func placeholders(in template: String) -> [String] {
        var names: [String] = []
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            names.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return names
    }
}
