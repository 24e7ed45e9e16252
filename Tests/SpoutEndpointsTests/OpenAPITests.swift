import Foundation
import SpoutCore
import SpoutEndpoints
import SpoutTestSupport
import Testing

@Suite("OpenAPI and ?api documentation")
struct OpenAPITests {
    /// Whether python3 with openapi-spec-validator is available. Under CI it must be.
    static var validatorAvailable: Bool {
        guard let result = try? ChildProcess.run(
            executable: "/usr/bin/env", arguments: ["python3", "-c", "import openapi_spec_validator"])
        else { return false }
        return result.status == 0
    }

    static var mustValidate: Bool {
        ProcessInfo.processInfo.environment["CI"] == "true" || self.validatorAvailable
    }

    @Test(
        "the generated document is valid OpenAPI 3.1 (openapi-spec-validator)",
        .enabled(if: OpenAPITests.mustValidate, "python3 with openapi-spec-validator is not installed (pip install openapi-spec-validator)"))
    func validates() throws {
        try Self.validate(try Repository.shippedEndpoints().openAPIDocument())
    }

    /// Uploads' shapes, which no shipped endpoint has: a body of a media type range, a text
    /// body, multipart file parts (one a list), Base64 fields, a stored file served by range.
    static let uploads = """
        paths:
          /typed/{name}:
            put:
              description: A photo of any image type, with its type.
              sql: INSERT INTO photo (name, image, media_type) VALUES (:name, :image, :imageType)
              body: image
              mediaType: image/*
              mediaTypeParameter: imageType
              maxBodyBytes: 3000000
              result: none
              parameters:
                image: {type: bytes, required: true}
            get:
              sql: SELECT image, media_type AS "mediaType" FROM photo WHERE name = :name
              result: bytes
              mediaType: image/*
              mediaTypeColumn: mediaType
          /photos:
            post:
              sql: INSERT INTO photo (name, image, caption) VALUES (:name, :image, :caption)
              result: none
              parameters:
                name: {required: true}
                image: {type: bytes, required: true}
                pages: {type: list of bytes}
                caption:
          /notes:
            post:
              sql: SELECT :note AS n
              result: scalar
              body: note
              parameters:
                note: {type: string}

        """

    @Test(
        "a document with uploads is valid OpenAPI 3.1 too",
        .enabled(if: OpenAPITests.mustValidate, "python3 with openapi-spec-validator is not installed (pip install openapi-spec-validator)"))
    func validatesUploads() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("uploads.yaml", Self.uploads)
        try Self.validate(try EndpointSet.load(files: [file], sqlDirectory: Repository.sqlDirectory, environment: [:]).openAPIDocument())
    }

    private static func validate(_ document: [UInt8]) throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("openapi.json", String(decoding: document, as: UTF8.self))
        let script = """
            import json, sys
            from openapi_spec_validator import validate
            with open(sys.argv[1]) as f:
                spec = json.load(f)
            validate(spec)
            print("valid", spec["openapi"])
            """
        let result = try ChildProcess.run(executable: "/usr/bin/env", arguments: ["python3", "-c", script, file])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "valid 3.1.0\n")
    }

    @Test("the validator rejects a broken document (the check can fail)",
        .enabled(if: OpenAPITests.validatorAvailable))
    func validatorRejects() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write(
            "openapi.json", #"{"openapi":"3.1.0","info":{"title":"x","version":"1"},"paths":{"/a/{id}":{"get":{"responses":{"200":{"description":"ok"}}}}}}"#)
        let result = try ChildProcess.run(
            executable: "/usr/bin/env",
            arguments: ["python3", "-c", "import json,sys\nfrom openapi_spec_validator import validate\nvalidate(json.load(open(sys.argv[1])))", file])
        #expect(result.status != 0)
    }

    @Test("the document describes parameters, bodies, results and errors")
    func content() throws {
        let bytes = try Repository.shippedEndpoints().openAPIDocument()
        let document = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        #expect(Set(paths.keys) == [
            "/employees", "/employees/{employeeNumber}", "/employees/{employeeNumber}/titles",
            "/employees/{employeeNumber}/salaries", "/departments", "/departments/{departmentNumber}",
            "/departments/{departmentNumber}/employees",
            "/salaries", "/owners", "/pets", "/pets/{name}", "/events", "/events/bulk",
        ])
        let employee = try #require(paths["/employees/{employeeNumber}"]?["get"] as? [String: Any])
        let parameters = try #require(employee["parameters"] as? [[String: Any]])
        #expect(parameters.map { $0["name"] as? String } == ["employeeNumber", "details"])
        #expect(parameters[0]["in"] as? String == "path")
        let keySchema = try #require(parameters[0]["schema"] as? [String: Any])
        #expect(keySchema["type"] as? String == "integer")
        #expect(keySchema["minimum"] as? Int == 1 && keySchema["maximum"] as? Int == 2_147_483_647)
        let petCreation = try #require(paths["/pets"]?["post"] as? [String: Any])
        let createJSON = ((petCreation["requestBody"] as? [String: Any])?["content"] as? [String: Any])?["application/json"] as? [String: Any]
        let nameSchema = try #require(((createJSON?["schema"] as? [String: Any])?["properties"] as? [String: Any])?["name"] as? [String: Any])
        #expect(nameSchema["minLength"] as? Int == 1 && nameSchema["maxLength"] as? Int == 20)
        let creationResponses = try #require(petCreation["responses"] as? [String: Any])
        #expect(creationResponses["415"] != nil)
        let detailsSchema = try #require(parameters[1]["schema"] as? [String: Any])
        #expect(detailsSchema["type"] as? String == "array")
        #expect((detailsSchema["items"] as? [String: Any])?["enum"] as? [String] == ["titles", "salaries"])
        let responses = try #require(employee["responses"] as? [String: Any])
        // An object is sent whole with a strong ETag: If-None-Match may answer 304.
        #expect(Set(responses.keys) == ["200", "304", "400", "404", "406", "500", "503", "504", "507"])
        let okHeaders = try #require((responses["200"] as? [String: Any])?["headers"] as? [String: Any])
        #expect(Set(okHeaders.keys) == ["ETag"])
        let schema = try #require(
            ((((responses["200"] as? [String: Any])?["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"])
                as? [String: Any])
        let properties = try #require(schema["properties"] as? [String: Any])
        #expect(Set(properties.keys) == ["employeeNumber", "firstName", "lastName", "titles", "salaries"])

        // Details of details: every path in the parameter's enum, nested arrays in the schema.
        let department = try #require(paths["/departments/{departmentNumber}"]?["get"] as? [String: Any])
        let departmentDetails = try #require(
            (department["parameters"] as? [[String: Any]])?.first { $0["name"] as? String == "details" }?["schema"] as? [String: Any])
        #expect((departmentDetails["items"] as? [String: Any])?["enum"] as? [String] == [
            "managers", "managers.titles", "managers.salaries", "employees", "employees.titles", "employees.salaries",
        ])
        let departmentOK = try #require((department["responses"] as? [String: Any])?["200"] as? [String: Any])
        let departmentSchema = try #require(
            ((departmentOK["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"] as? [String: Any])
        let members = try #require((departmentSchema["properties"] as? [String: Any])?["employees"] as? [String: Any])
        #expect(members["type"] as? String == "array")
        let memberProperties = try #require((members["items"] as? [String: Any])?["properties"] as? [String: Any])
        #expect(Set(memberProperties.keys) == ["employeeNumber", "firstName", "lastName", "hireDate", "titles", "salaries"])
        let memberTitles = try #require(memberProperties["titles"] as? [String: Any])
        #expect(memberTitles["description"] as? String == "The employee's titles, oldest first. Present when details includes employees.titles.")
        let titleProperties = (memberTitles["items"] as? [String: Any])?["properties"] as? [String: Any]
        #expect(Set(titleProperties?.keys ?? [:].keys) == ["title", "fromDate", "toDate"])

        // A paged list: the page parameters, and Link and ETag on its 200.
        let list = try #require(paths["/employees"]?["get"] as? [String: Any])
        let listParameters = try #require(list["parameters"] as? [[String: Any]])
        #expect(listParameters.compactMap { $0["name"] as? String }.suffix(3) == ["details", "pageSize", "after"])
        let listResponses = try #require(list["responses"] as? [String: Any])
        #expect(listResponses["304"] != nil)
        let listHeaders = try #require((listResponses["200"] as? [String: Any])?["headers"] as? [String: Any])
        #expect(Set(listHeaders.keys) == ["ETag", "Link"])
        // A stream without versionSql has no validator; pets has one.
        #expect((paths["/salaries"]?["get"] as? [String: Any]).flatMap { ($0["responses"] as? [String: Any])?["304"] } == nil)
        let petsHeaders = ((paths["/pets"]?["get"] as? [String: Any])?["responses"] as? [String: Any]).flatMap {
            ($0["200"] as? [String: Any])?["headers"] as? [String: Any]
        }
        #expect(petsHeaders?["ETag"] != nil)

        let create = try #require(paths["/pets"]?["post"] as? [String: Any])
        let body = try #require(create["requestBody"] as? [String: Any])
        let form = try #require(
            ((body["content"] as? [String: Any])?["application/x-www-form-urlencoded"] as? [String: Any])?["schema"] as? [String: Any])
        #expect(form["required"] as? [String] == ["name"])
        #expect(Set((form["properties"] as? [String: Any])?.keys ?? [:].keys) == ["name", "species", "sex", "birth", "death"])
        let created = try #require((create["responses"] as? [String: Any])?["201"] as? [String: Any])
        #expect((created["headers"] as? [String: Any])?["Location"] != nil)
        #expect((create["responses"] as? [String: Any])?["409"] != nil)
        let delete = try #require(paths["/pets/{name}"]?["delete"] as? [String: Any])
        // 412: If-Match names a version of GET /pets/{name} (docs/endpoints.md, Conditional writes).
        #expect(Set((delete["responses"] as? [String: Any])?.keys ?? [:].keys) == ["204", "400", "401", "403", "404", "409", "412", "422", "500", "503", "504", "507"])
        // The pets' writes take a verified token; their reads are open.
        #expect((delete["security"] as? [[String: [String]]]) == [["bearerJWT": []]])
        #expect((paths["/pets"]?["get"] as? [String: Any])?["security"] == nil)
        let schemes = try #require((document["components"] as? [String: Any])?["securitySchemes"] as? [String: Any])
        #expect((schemes["bearerJWT"] as? [String: Any])?["bearerFormat"] as? String == "JWT")
        #expect(schemes["identityApiKey"] == nil)
        let components = try #require(document["components"] as? [String: Any])
        let error = try #require((components["schemas"] as? [String: Any])?["Error"] as? [String: Any])
        #expect(error["required"] as? [String] == ["error"])
    }

    @Test("with API keys that carry identities, token-covered operations offer them as an alternative")
    func identityKeysInTheDocument() throws {
        var endpoints = try Repository.shippedEndpoints()
        var configuration = SpoutConfiguration()
        configuration.identity.apiKeys = [.init(subject: "reports", keyFromEnvironment: "K")]
        endpoints.tokenVerifier = try EndpointSet.tokenVerifier(configuration: configuration, environment: ["K": "a-key"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(endpoints.openAPIDocument())) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let delete = try #require(paths["/pets/{name}"]?["delete"] as? [String: Any])
        #expect((delete["security"] as? [[String: [String]]]) == [["bearerJWT": []], ["identityApiKey": []]])
        let schemes = try #require((document["components"] as? [String: Any])?["securitySchemes"] as? [String: Any])
        let scheme = try #require(schemes["identityApiKey"] as? [String: Any])
        #expect(scheme["in"] as? String == "header" && scheme["name"] as? String == "X-API-Key")
    }
}
