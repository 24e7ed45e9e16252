import HTTPTypes
import SpoutCore
import SpoutHTTP

/// Generates the OpenAPI 3.1 document of an ``EndpointSet``.
///
/// What it states, per endpoint: the path and query parameters (path keys are required
/// strings unless declared otherwise; list parameters are repeated keys, `style: form,
/// explode: true`), the request body of POST, PUT and PATCH (form, multipart or JSON object
/// with the non-path parameters), the success response (an array of row objects, one object,
/// a bare value, 201 with `Location`, or 204) with the row properties that can be read from
/// the SQL (their types are only known to the database, so they are left open), and the error
/// responses with the JSON error body `{"error", "parameter", "value", "allowed", "accepted"}`.
///
/// Endpoints that need an API key (an endpoint file's `auth`) list the security schemes
/// `bearerAuth` (`Authorization: Bearer <key>`) and `apiKeyAuth` (`X-API-Key`) as
/// alternatives, and the 401 and 403 responses; the schemes are declared under
/// `components.securitySchemes` when at least one endpoint needs a key. Endpoints that take a
/// verified token (`auth: {token: jwt}`) list the scheme `bearerJWT`, `identityApiKey` when API
/// keys carry identities (and an empty requirement too when they allow anonymous callers),
/// with their 401 (`InvalidToken`) and 403 (`InsufficientScope`) responses.
struct OpenAPIDocument {
    let endpoints: EndpointSet
    /// How results write dates and timestamps (the database configuration's `dateFormat`).
    var dateFormat: DateFormat = .epochMilliseconds

    var bytes: [UInt8] { Array(self.document.text(pretty: true).utf8) }

    var document: JSONValue {
        var paths: [(String, JSONValue)] = []
        var operationIds: Set<String> = []
        for endpoint in self.endpoints.endpoints {
            let operation = self.operation(endpoint, operationIds: &operationIds)
            let method = endpoint.method.rawValue.lowercased()
            if let index = paths.firstIndex(where: { $0.0 == endpoint.path }) {
                paths[index].1.set(method, operation)
            } else {
                paths.append((endpoint.path, .object([(method, operation)])))
            }
            if let bulkPath = endpoint.bulkPath {
                paths.append((bulkPath, .object([("post", self.bulkOperation(endpoint, path: bulkPath, operationIds: &operationIds))])))
            }
        }
        var tags: [JSONValue] = []
        for file in self.endpoints.files where !tags.contains(where: { Self.name(of: $0) == file.tag }) {
            var tag: JSONValue = ["name": .string(file.tag)]
            if let summary = file.summary { tag.set("description", .string(summary)) }
            tags.append(tag)
        }
        return [
            "openapi": "3.1.0",
            "info": [
                "title": .string(self.endpoints.title),
                "version": .string(self.endpoints.version),
                "description": .string(
                    "Generated from the endpoint files. Dates and timestamps in results are written as the service's "
                        + "date format (epoch milliseconds by default); add ?api to any GET path for HTML documentation."),
            ],
            "tags": .array(tags),
            "paths": .object(paths),
            "components": self.components,
        ]
    }

    private static func name(of tag: JSONValue) -> String? {
        if case .object(let members) = tag, case .string(let name)? = members.first(where: { $0.0 == "name" })?.1 {
            return name
        }
        return nil
    }

    // MARK: Operations

    private func operation(_ endpoint: Endpoint, operationIds: inout Set<String>) -> JSONValue {
        var operation: JSONValue = [
            "operationId": .string(Self.operationId(endpoint, taken: &operationIds)),
            "tags": [.string(endpoint.tag)],
        ]
        if let summary = endpoint.summary { operation.set("description", .string(summary)) }
        if let policy = endpoint.tokenPolicy {
            var alternatives: [JSONValue] = [[Self.jwtScheme: []]]
            if self.hasIdentityKeys { alternatives.append([Self.identityKeyScheme: []]) }
            if policy.anonymous { alternatives.append([:]) }
            operation.set("security", .array(alternatives))
        }
        if endpoint.requiresAPIKey {
            operation.set("security", [[Self.bearerScheme: []], [Self.apiKeyScheme: []]])
        }
        let keys = endpoint.pathKeys
        // An upload's body is one parameter; the others come from the path and the query.
        let hasBody = endpoint.method.sendsArgumentsInBody && endpoint.body == nil
        var parameters: [JSONValue] = []
        var bodyProperties: [(String, JSONValue)] = []
        var multipartProperties: [(String, JSONValue)] = []
        var bodyRequired: [JSONValue] = []
        for parameter in endpoint.parameters {
            let isPath = keys.contains(parameter.name)
            if parameter.name == endpoint.body {
                operation.set("requestBody", Self.uploadBody(parameter, mediaType: endpoint.mediaType))
                continue
            }
            // Set from the body's Content-Type, never sent as a parameter.
            if parameter.name == endpoint.mediaTypeParameter { continue }
            if hasBody && !isPath {
                var schema = Self.schema(for: parameter)
                if let summary = parameter.summary { schema.set("description", .string(summary)) }
                bodyProperties.append((parameter.name, schema))
                // A multipart part is the file itself, not its Base64.
                if parameter.type.elementType == .bytes {
                    var part: JSONValue = ["type": "string", "contentMediaType": "application/octet-stream"]
                    if parameter.type.isList { part = ["type": "array", "items": part] }
                    if let summary = parameter.summary { part.set("description", .string(summary)) }
                    multipartProperties.append((parameter.name, part))
                } else {
                    multipartProperties.append((parameter.name, schema))
                }
                if parameter.isRequired { bodyRequired.append(.string(parameter.name)) }
                continue
            }
            var item: JSONValue = [
                "name": .string(parameter.name),
                "in": isPath ? "path" : "query",
                "required": .bool(isPath || parameter.isRequired),
            ]
            if let summary = parameter.summary { item.set("description", .string(summary)) }
            item.set("schema", Self.schema(for: parameter))
            if parameter.type.isList {
                item.set("style", "form")
                item.set("explode", true)
            }
            parameters.append(item)
        }
        if !endpoint.readOnly {
            parameters.append(
                [
                    "name": "Idempotency-Key", "in": "header", "required": false,
                    "description":
                        "Makes the write safe to send again: a replay by the same caller gets the first answer (Idempotent-Replayed: true) and applies nothing; the same key with another request is 422",
                    // Visible ASCII but the quote, which a Structured Field string wraps it in.
                    "schema": ["type": "string", "minLength": .integer(1), "maxLength": .integer(255), "pattern": "^[!#-~]+$"],
                ])
        }
        if endpoint.sync != nil {
            parameters.append(
                [
                    "name": "Last-Event-ID", "in": "header", "required": false,
                    "description":
                        "With Accept: text/event-stream, the id of the last event received (a sync cursor): the stream resumes from it, and a change made since comes at once",
                    "schema": ["type": "string"],
                ])
        }
        if self.endpoints.representation(of: endpoint) != nil {
            parameters.append(
                [
                    "name": "If-Match", "in": "header", "required": false,
                    "description":
                        "Applies the write only if the resource's current row still has one of these ETags (from its GET), or exists (*); else 412 with the current row",
                    "schema": ["type": "string"],
                ])
            parameters.append(
                [
                    "name": "If-None-Match", "in": "header", "required": false,
                    "description": "* applies the write only if the resource has no row yet; else 412 with the current row",
                    "schema": ["type": "string"],
                ])
        }
        if !parameters.isEmpty { operation.set("parameters", .array(parameters)) }
        if hasBody && !bodyProperties.isEmpty {
            var schema: JSONValue = ["type": "object", "properties": .object(bodyProperties)]
            var multipart: JSONValue = ["type": "object", "properties": .object(multipartProperties)]
            if !bodyRequired.isEmpty {
                schema.set("required", .array(bodyRequired))
                multipart.set("required", .array(bodyRequired))
            }
            operation.set(
                "requestBody",
                [
                    "required": .bool(!bodyRequired.isEmpty),
                    "content": [
                        "application/x-www-form-urlencoded": ["schema": schema],
                        "multipart/form-data": ["schema": multipart],
                        "application/json": ["schema": schema],
                    ],
                ])
        }
        operation.set("responses", self.responses(endpoint))
        return operation
    }

    /// `POST <path>/bulk` of a `bulk` endpoint: the records as a JSON array (each the single
    /// write's JSON body), JSON Lines or CSV; the counts, or the refused record's position.
    private func bulkOperation(_ endpoint: Endpoint, path: String, operationIds: inout Set<String>) -> JSONValue {
        var bulk = endpoint
        bulk.path = path
        bulk.bulk = false
        var operation = self.operation(bulk, operationIds: &operationIds)
        operation.set("description", .string("Many records in one request, all in one transaction: " + (endpoint.summary ?? endpoint.title)))
        let keys = endpoint.pathKeys
        var properties: [(String, JSONValue)] = []
        var required: [JSONValue] = []
        for parameter in endpoint.parameters where !keys.contains(parameter.name) {
            var schema = Self.schema(for: parameter)
            if let summary = parameter.summary { schema.set("description", .string(summary)) }
            properties.append((parameter.name, schema))
            if parameter.isRequired { required.append(.string(parameter.name)) }
        }
        var record: JSONValue = ["type": "object", "properties": .object(properties)]
        if !required.isEmpty { record.set("required", .array(required)) }
        var line = record
        line.set("description", "One record a line (also application/jsonl)")
        operation.set(
            "requestBody",
            [
                "required": true,
                "content": [
                    "application/json": ["schema": ["type": "array", "items": record]],
                    "application/x-ndjson": ["schema": line],
                    "text/csv": ["schema": ["type": "string", "description": "A header row of parameter names, then one record a row"]],
                ],
            ])
        let error: JSONValue = [
            "type": "object",
            "properties": [
                "error": ["type": "string"], "index": ["type": "integer"], "line": ["type": "integer"], "parameter": ["type": "string"],
            ],
        ]
        var answer: JSONValue = [
            "type": "object", "required": ["records", "changed"],
            "properties": ["records": ["type": "integer"], "changed": ["type": "integer"]],
        ]
        if BulkWrite.answersKeys(endpoint.result) {
            answer = [
                "type": "object", "required": ["records", "changed", "keys"],
                "properties": [
                    "records": ["type": "integer"], "changed": ["type": "integer"],
                    "keys": ["type": "array", "items": self.rowSchema(endpoint), "description": "The rows the statements returned, in record order"],
                ],
            ]
        }
        var responses: JSONValue = [
            "200": [
                "description": "Every record applied and committed: how many, and the rows their statements changed",
                "content": ["application/json": ["schema": answer]],
            ],
            "400": [
                "description": "A record refused (its index or line, and the parameter); nothing committed",
                "content": ["application/json": ["schema": error]],
            ],
            "415": ["description": "A body that is not a JSON array, JSON Lines or CSV"],
            "422": [
                "description": "A record that changed no row (its index or line); nothing committed",
                "content": ["application/json": ["schema": error]],
            ],
        ]
        if BulkWrite.answersKeys(endpoint.result) {
            responses.set("413", ["description": "Under an Idempotency-Key, keys of more than 4 MiB; nothing committed"])
        }
        if endpoint.tokenPolicy != nil || endpoint.requiresAPIKey {
            responses.set("401", ["description": "No valid credentials"])
            responses.set("403", ["description": "Credentials not allowed here"])
        }
        operation.set("responses", responses)
        return operation
    }

    private static func operationId(_ endpoint: Endpoint, taken: inout Set<String>) -> String {
        var id = endpoint.method.rawValue.lowercased()
        for segment in EndpointPath.segments(of: endpoint.path) {
            let isKey = EndpointPath.isKey(segment)
            let word = isKey ? String(segment.dropFirst().dropLast()) : String(segment)
            if isKey { id += "By" }
            var capitalizeNext = true
            for character in word {
                if character.isLetter || character.isNumber {
                    id += capitalizeNext ? character.uppercased() : String(character)
                    capitalizeNext = false
                } else {
                    capitalizeNext = true
                }
            }
        }
        var unique = id
        var counter = 2
        while taken.contains(unique) {
            unique = id + String(counter)
            counter += 1
        }
        taken.insert(unique)
        return unique
    }

    // MARK: Schemas

    static func schema(for parameter: Parameter) -> JSONValue {
        var element = self.schema(for: parameter.type.elementType)
        if let allowed = parameter.allowedValues { element.set("enum", .array(allowed.map(JSONValue.init))) }
        let limits = parameter.limits
        if let minimum = limits.minimum { element.set("minimum", JSONValue(minimum)) }
        if let maximum = limits.maximum { element.set("maximum", JSONValue(maximum)) }
        if let minLength = limits.minLength { element.set("minLength", .integer(Int64(minLength))) }
        if let maxLength = limits.maxLength { element.set("maxLength", .integer(Int64(maxLength))) }
        var schema = element
        if parameter.type.isList { schema = ["type": "array", "items": element] }
        if let defaultValue = parameter.defaultValue { schema.set("default", JSONValue(defaultValue)) }
        return schema
    }

    /// The request body of an upload (``Endpoint/body``): the parameter's value as it is, of
    /// the endpoint's media type (any when it names none).
    private static func uploadBody(_ parameter: Parameter, mediaType: String?) -> JSONValue {
        var schema: JSONValue = parameter.type == .bytes ? ["type": "string", "format": "binary"] : ["type": "string"]
        if let summary = parameter.summary { schema.set("description", .string(summary)) }
        return [
            "required": .bool(parameter.isRequired),
            "content": .object([(mediaType ?? "*/*", ["schema": schema] as JSONValue)]),
        ]
    }

    static func schema(for type: ParameterType) -> JSONValue {
        switch type {
        case .string: return ["type": "string"]
        case .integer: return ["type": "integer", "format": "int64"]
        case .number: return ["type": "number", "format": "double"]
        case .decimal: return ["type": "string", "format": "decimal", "pattern": "^[+-]?([0-9]+(\\.[0-9]+)?|\\.[0-9]+)$"]
        case .boolean: return ["type": "boolean"]
        case .date:
            return ["description": "YYYY-MM-DD, or epoch milliseconds", "oneOf": [["type": "string", "format": "date"], ["type": "integer"]]]
        case .datetime:
            return [
                "description": "ISO-8601, or epoch milliseconds",
                "oneOf": [["type": "string", "format": "date-time"], ["type": "integer"]],
            ]
        case .bytes: return ["type": "string", "contentEncoding": "base64"]
        case .list(let element): return ["type": "array", "items": self.schema(for: element)]
        }
    }

    /// An object with the labels the SQL shows (open to others when the list is incomplete),
    /// and an array property for each detail, its items described the same way, to any depth.
    private func rowSchema(_ endpoint: Endpoint) -> JSONValue {
        let columns = self.endpoints.resultColumns[endpoint.title]
        var properties: [(String, JSONValue)] = endpoint.labels.map { ($0, self.columnSchema($0, of: columns?[""])) }
        properties += self.detailProperties(
            endpoint.details, parameter: endpoint.detailsParameter ?? "details", prefix: "", columns: columns ?? [:])
        var schema: JSONValue = ["type": "object"]
        if !properties.isEmpty { schema.set("properties", .object(properties)) }
        if endpoint.labelsComplete && !endpoint.labels.isEmpty {
            schema.set("required", .array(endpoint.labels.map { .string($0) }))
        }
        return schema
    }

    /// The array properties of `details`, whose paths start with `prefix`: each present when
    /// the details `parameter` includes its path.
    private func detailProperties(
        _ details: [EndpointDetail], parameter: String, prefix: String, columns: [String: [Column]]
    ) -> [(String, JSONValue)] {
        details.map { detail in
            let path = prefix + detail.name
            var description = "Present when \(parameter) includes \(path)."
            if let summary = detail.summary { description = summary + " " + description }
            let nested = self.detailProperties(
                detail.details, parameter: parameter, prefix: path + String(EndpointDetail.pathSeparator), columns: columns)
            let own = detail.labels.map { ($0, self.columnSchema($0, of: columns[path])) }
            return (
                detail.name,
                ["type": "array", "description": .string(description), "items": ["type": "object", "properties": .object(own + nested)]]
            )
        }
    }

    /// The schema of result column `label` among `columns` (as the database described them at
    /// start); `{}` (any value) when unknown. Every column may be null: a statement does not
    /// say which cannot.
    private func columnSchema(_ label: String, of columns: [Column]?) -> JSONValue {
        guard let column = columns?.first(where: { $0.label == label }) else { return [:] }
        return self.schema(of: column.type)
    }

    /// How a value of `type` is written in JSON (docs/endpoints.md, "Same JSON from PostgreSQL
    /// and SQLite"), or null.
    private func schema(of type: ColumnType) -> JSONValue {
        func nullable(_ name: String) -> JSONValue { .array([.string(name), .string("null")]) }
        let epoch = self.dateFormat == .epochMilliseconds
        switch type {
        case .integer: return ["type": nullable("integer"), "format": "int64"]
        case .double: return ["type": nullable("number"), "format": "double"]
        case .decimal: return ["type": nullable("number"), "description": "An exact decimal, written with all its digits"]
        case .bool: return ["type": nullable("boolean")]
        case .text, .time: return ["type": nullable("string")]
        case .date:
            return epoch
                ? ["type": nullable("integer"), "description": "A date: epoch milliseconds of its midnight, UTC"]
                : ["type": nullable("string"), "format": "date"]
        case .timestamp:
            return epoch ? ["type": nullable("integer"), "description": "Epoch milliseconds"] : ["type": nullable("string"), "format": "date-time"]
        case .bytes: return ["type": nullable("string"), "contentEncoding": "base64"]
        case .array(let element): return ["type": nullable("array"), "items": self.schema(of: element)]
        case .json, .unknown: return [:]
        }
    }

    private func responses(_ endpoint: Endpoint) -> JSONValue {
        var responses: JSONValue = [:]
        let row = self.rowSchema(endpoint)
        switch endpoint.result {
        case .rows where endpoint.sync != nil:
            // With `since`, a sync read: the cursor, the keys to forget, the rows that changed.
            let key: JSONValue = ["type": "object", "properties": .object((endpoint.sync?.key ?? []).map { ($0, [:] as JSONValue) })]
            let delta: JSONValue = [
                "type": "object", "required": ["cursor", "deleted", "rows"],
                "properties": [
                    "cursor": ["type": "string", "description": "Where the next sync read starts (its since)"],
                    "deleted": ["type": "array", "items": key, "description": "Keys of rows to forget: deleted, moved out of the result, or hidden"],
                    "rows": ["type": "array", "items": row, "description": "Rows that changed since the cursor, whole"],
                ],
            ]
            responses.set(
                "200",
                [
                    "description":
                        "The rows, streamed (JSON array; JSON Lines or CSV when asked for with Accept); with since, a sync read (an object; JSON Lines: a cursor line, then deleted and row lines); with Accept: text/event-stream, live notices",
                    "content": [
                        "application/json": ["schema": ["oneOf": [["type": "array", "items": row], delta]]],
                        "application/x-ndjson": ["schema": ["type": "object"]],
                        "text/csv": ["schema": ["type": "string"]],
                        "text/event-stream": [
                            "schema": [
                                "type": "string",
                                "description":
                                    "Server-Sent Events: an event `change` whenever the caller's result may have changed, its id and data.cursor a sync cursor to read the change from (since); a comment line as heartbeat; the stream ends when the token expires",
                            ]
                        ],
                    ],
                ])
            responses.set(
                "410",
                [
                    "description": "Gone: the sync cursor is older than the change log keeps; sync again with since=0",
                    "content": [
                        "application/json": [
                            "schema": ["type": "object", "properties": ["error": ["type": "string"], "parameter": ["type": "string"]]]
                        ]
                    ],
                ])
        case .rows:
            responses.set(
                "200",
                [
                    "description": "The rows, streamed (JSON array; JSON Lines or CSV when asked for with Accept)",
                    "content": [
                        "application/json": ["schema": ["type": "array", "items": row]],
                        "application/x-ndjson": ["schema": row],
                        "text/csv": ["schema": ["type": "string"]],
                    ],
                ])
        case .object:
            // A row whose details have details streams: no body digest then.
            let streamedTag = endpoint.versionSQL != nil ? "with a weak ETag from versionSql" : "without an ETag"
            let description = EndpointDetail.depth(of: endpoint.details) > 1
                ? "The row; streamed, \(streamedTag), when details of details are selected" : "The row"
            responses.set("200", ["description": .string(description), "content": ["application/json": ["schema": row]]])
        case .scalar:
            responses.set("200", ["description": "The value", "content": ["application/json": ["schema": [:]]]])
        case .bytes:
            let mediaType = endpoint.mediaType ?? "application/octet-stream"
            responses.set(
                "200",
                ["description": "The stored bytes", "content": .object([(mediaType, ["schema": ["type": "string", "format": "binary"]] as JSONValue)])])
        case .created:
            var created: JSONValue = [
                "description": "Created",
                "headers": ["Location": ["description": "The path of the new resource", "schema": ["type": "string"]]],
            ]
            if !endpoint.labels.isEmpty || !endpoint.labelsComplete {
                created.set("content", ["application/json": ["schema": row]])
            }
            responses.set("201", created)
        case .none:
            responses.set("204", ["description": "Done"])
        }
        if endpoint.method == .get {
            let headers = Self.readHeaders(endpoint)
            if case .object(let fields) = headers, !fields.isEmpty, case .object(let members) = responses,
                case .object(var ok)? = members.first(where: { $0.0 == "200" })?.1
            {
                ok.append(("headers", headers))
                responses.set("200", .object(ok))
            }
            if Self.isValidated(endpoint) {
                responses.set(
                    "304",
                    [
                        "description": "Not Modified: the ETag sent in If-None-Match is still current (no body)",
                        "headers": ["ETag": ["schema": ["type": "string"]]],
                    ])
            }
        }
        responses.set("400", ["$ref": "#/components/responses/BadRequest"])
        if endpoint.requiresAPIKey {
            responses.set("401", ["$ref": "#/components/responses/Unauthorized"])
            responses.set("403", ["$ref": "#/components/responses/Forbidden"])
        }
        if endpoint.tokenPolicy != nil {
            responses.set("401", ["$ref": "#/components/responses/InvalidToken"])
            responses.set("403", ["$ref": "#/components/responses/InsufficientScope"])
        }
        if endpoint.result != .rows { responses.set("404", ["$ref": "#/components/responses/NotFound"]) }
        if endpoint.result.shape != nil { responses.set("406", ["$ref": "#/components/responses/NotAcceptable"]) }
        if !endpoint.readOnly { responses.set("409", ["$ref": "#/components/responses/Conflict"]) }
        if let current = self.endpoints.representation(of: endpoint) {
            responses.set(
                "412",
                [
                    "description": .string(
                        "Precondition Failed: If-Match or If-None-Match does not hold; the body is the current row as GET \(current.endpoint.path) answers it, with its ETag (an error when there is no row)"
                    ),
                    "headers": ["ETag": ["schema": ["type": "string"]]],
                    "content": ["application/json": ["schema": self.rowSchema(current.endpoint)]],
                ])
        }
        if endpoint.method.readsArguments(fromBodyFor: endpoint.parameters) {
            responses.set("415", ["$ref": "#/components/responses/UnsupportedMediaType"])
        }
        if !endpoint.readOnly { responses.set("422", ["$ref": "#/components/responses/UnprocessableContent"]) }
        responses.set("500", ["$ref": "#/components/responses/InternalServerError"])
        responses.set("503", ["$ref": "#/components/responses/ServiceUnavailable"])
        responses.set("504", ["$ref": "#/components/responses/GatewayTimeout"])
        // A write that needs new space, or a read whose sort spills to temporary files.
        responses.set("507", ["$ref": "#/components/responses/InsufficientStorage"])
        return responses
    }

    /// Whether a GET endpoint's responses carry an `ETag` (results sent whole, pages, and
    /// streams with `versionSql`).
    static func isValidated(_ endpoint: Endpoint) -> Bool {
        endpoint.result != .rows || endpoint.page != nil || endpoint.versionSQL != nil
    }

    /// The fields of a GET endpoint's 200 response beyond the content: validators, paging,
    /// the row limit's report, caching.
    static func readHeaders(_ endpoint: Endpoint) -> JSONValue {
        let text: JSONValue = ["type": "string"]
        var headers: [(String, JSONValue)] = []
        if self.isValidated(endpoint) {
            var description = "A digest of the body (strong); for a whole stream, of its versionSql's value (weak, W/)"
            if endpoint.result != .rows { description = "A digest of the body (strong)" }
            headers.append(("ETag", ["description": .string(description), "schema": text]))
        }
        if let page = endpoint.page {
            headers.append(
                (
                    "Link",
                    [
                        "description": .string(
                            "With pageSize or after: <URL of the next page>; rel=\"next\", absent on the last page "
                                + "(pages ordered by \(page.key.joined(separator: ", ")))"),
                        "schema": text,
                    ]
                ))
        }
        if let limit = endpoint.rowLimit {
            headers.append(
                (
                    "Spout-Truncated",
                    [
                        "description": .string(
                            "true when the row limit (\(limit)) cut the result: a header when the result is sent whole, "
                                + "else a trailer announced by Trailer: Spout-Truncated"),
                        "schema": ["type": "string", "enum": ["true", "false"]],
                    ]
                ))
        }
        if let cache = endpoint.cache {
            headers.append(("Cache-Control", ["description": .string(cache.headerValue), "schema": text]))
        }
        return .object(headers)
    }

    private var components: JSONValue {
        let error: JSONValue = [
            "type": "object",
            "required": ["error"],
            "properties": [
                "error": ["type": "string", "description": "What went wrong"],
                "parameter": ["type": "string", "description": "The parameter at fault (400; 409 and 422 when one parameter's value caused the violation)"],
                "value": ["type": "string", "description": "The value sent for it (400, 409, 422)"],
                "allowed": ["type": "array", "items": ["type": "string"], "description": "Its allowed values (400)"],
                "accepted": [
                    "type": "array", "items": ["type": "string"], "description": "The query parameters the endpoint takes (400, unknown parameter)",
                ],
            ],
        ]
        func response(_ description: String) -> JSONValue {
            [
                "description": .string(description),
                "content": ["application/json": ["schema": ["$ref": "#/components/schemas/Error"]]],
            ]
        }
        var responses: JSONValue = [
            "BadRequest": response("A parameter is missing, invalid or not allowed"),
            "NotFound": response("No such resource"),
            "NotAcceptable": response("No offered format matches Accept"),
            "Conflict": response("A row with the same key exists"),
            "UnsupportedMediaType": response("The body is not JSON, a form or multipart form data"),
            "UnprocessableContent": response("A constraint of the database rejected the values"),
            "InternalServerError": response("An unexpected error"),
            "ServiceUnavailable": response("No database connection is available, or the data is locked; retry later"),
            "GatewayTimeout": response("The statement ran longer than its timeout, or the database did not answer"),
            "InsufficientStorage": response("The database's disk is full; nothing was stored"),
        ]
        let protected = self.endpoints.endpoints.contains(where: \.requiresAPIKey)
        if protected {
            var unauthorized = response("No API key was sent")
            unauthorized.set(
                "headers",
                ["WWW-Authenticate": ["description": .string("Bearer realm=\"\(APIKeySet.realm)\""), "schema": ["type": "string"]]])
            responses.set("Unauthorized", unauthorized)
            responses.set("Forbidden", response("The API key sent matches no key"))
        }
        let tokens = self.endpoints.endpoints.contains { $0.tokenPolicy != nil }
        if tokens {
            var invalid = response("No token was sent, or it does not verify (expired, bad signature, …)")
            invalid.set(
                "headers",
                [
                    "WWW-Authenticate": [
                        "description": .string("Bearer realm=\"\(APIKeySet.realm)\", error=\"invalid_token\" (no error without a token)"),
                        "schema": ["type": "string"],
                    ]
                ])
            responses.set("InvalidToken", invalid)
            responses.set("InsufficientScope", response("Insufficient scope: the token's role is not one the endpoint or the server allows, or it lacks a claim the endpoint requires (auth.requiredClaims)"))
        }
        var components: JSONValue = ["schemas": ["Error": error], "responses": responses]
        var schemes: JSONValue = [:]
        if tokens {
            schemes.set(
                Self.jwtScheme,
                [
                    "type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                    "description": "A verified bearer token: Authorization: Bearer <JWT>; its claims reach the SQL",
                ])
        }
        if tokens && self.hasIdentityKeys {
            schemes.set(
                Self.identityKeyScheme,
                [
                    "type": "apiKey", "in": "header", "name": "X-API-Key",
                    "description": "An API key that stands for a subject and role (identity.apiKeys); its claims reach the SQL",
                ])
        }
        if protected {
            schemes.set(
                Self.bearerScheme,
                ["type": "http", "scheme": "bearer", "description": "An API key as a bearer token: Authorization: Bearer <key>"])
            schemes.set(
                Self.apiKeyScheme, ["type": "apiKey", "in": "header", "name": "X-API-Key", "description": "An API key in the X-API-Key header"])
        }
        if tokens || protected { components.set("securitySchemes", schemes) }
        return components
    }

    /// The names of the security schemes of endpoints that need an API key.
    static let bearerScheme = "bearerAuth"
    static let apiKeyScheme = "apiKeyAuth"
    /// The name of the security scheme of endpoints that take a verified token.
    static let jwtScheme = "bearerJWT"
    /// The name of the scheme of API keys that carry an identity, beside ``jwtScheme``.
    static let identityKeyScheme = "identityApiKey"

    /// Whether API keys carry identities (`identity.apiKeys`).
    var hasIdentityKeys: Bool { (self.endpoints.tokenVerifier?.apiKeys.count ?? 0) > 0 }
}
