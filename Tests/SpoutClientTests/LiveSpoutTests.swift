import Foundation
import SpoutClient
import SpoutTestSupport
import Testing

/// The client against a real `spout serve` on the seeded SQLite default: typed errors,
/// nested details, both date formats, writes.
@Suite struct LiveSpoutTests {
    struct Title: Decodable, Equatable {
        var title: String
        var fromDate: Date
        var toDate: Date
    }

    struct Salary: Decodable {
        var salary: Int
        var fromDate: Date
    }

    struct EmployeeWithDetails: Decodable {
        var employeeNumber: Int
        var firstName: String
        var lastName: String
        var titles: [Title]
        var salaries: [Salary]?
    }

    struct Pet: Decodable, Equatable {
        var name: String
        var owner: String?
        var species: String
        var sex: String?
        var birth: Date
        var death: Date?
    }

    /// `GET /employees/10004?details=titles` as README.md shows it.
    static let greta = (
        staff: Title(
            title: "Staff", fromDate: Date(timeIntervalSince1970: 907_804_800), toDate: Date(timeIntervalSince1970: 983_232_000)),
        senior: Title(
            title: "Senior Staff", fromDate: Date(timeIntervalSince1970: 983_232_000),
            toDate: Date(timeIntervalSince1970: 253_370_764_800))
    )

    @Test func aBadArgumentThrowsTheTypedErrorNamingTheParameter() async throws {
        try await LiveSpout.with { server in
            let client = server.client()
            do {
                _ = try await client.object(EmployeeWithDetails.self, path: "/employees/abc")
                Issue.record("GET /employees/abc must throw")
            } catch SpoutClientError.server(let error) {
                #expect(error.status == 400)
                #expect(error.message == "invalid integer")
                #expect(error.parameter == "employeeNumber")
                #expect(error.value == "abc")
                #expect(error.requestID?.isEmpty == false)
            }
            do {
                _ = try await client.rows(Title.self, path: "/employees/10004", query: [URLQueryItem(name: "details", value: "children")])
                Issue.record("details=children must throw")
            } catch SpoutClientError.server(let error) {
                #expect(error.status == 400)
                #expect(error.parameter == "details")
                #expect(error.allowed == ["titles", "salaries"])
            }
            await #expect(throws: SpoutClientError.self) {
                _ = try await client.object(EmployeeWithDetails.self, path: "/employees/999999999")
            }
        }
    }

    @Test func nestedDetailsDecodeIntoNestedDecodables() async throws {
        try await LiveSpout.with { server in
            let client = server.client()
            let greta = try await client.object(
                EmployeeWithDetails.self, path: "/employees/10004",
                query: [URLQueryItem(name: "details", value: "titles"), URLQueryItem(name: "details", value: "salaries")])
            #expect(greta.firstName == "Greta" && greta.lastName == "Haddad")
            #expect(greta.titles == [Self.greta.staff, Self.greta.senior])
            #expect(greta.salaries?.isEmpty == false)

            // The same details on every row of a stream.
            var count = 0
            let query = [URLQueryItem(name: "lastName", value: "Haddad"), URLQueryItem(name: "details", value: "titles")]
            for try await employee in try await client.rows(EmployeeWithDetails.self, path: "/employees", query: query) {
                #expect(employee.lastName == "Haddad")
                #expect(!employee.titles.isEmpty)
                count += 1
            }
            #expect(count > 1)

            // The same stream as JSON Lines.
            let lines = server.client(SpoutClientConfiguration(rowFormat: .jsonLines))
            var numbers: [Int] = []
            for try await employee in try await lines.rows(EmployeeWithDetails.self, path: "/employees", query: query) {
                #expect(!employee.titles.isEmpty)
                numbers.append(employee.employeeNumber)
            }
            #expect(numbers.count == count)
            #expect(numbers == numbers.sorted())
        }
    }

    /// A department with its employees and their titles and salaries (details of details).
    struct Department: Decodable {
        struct Member: Decodable {
            var employeeNumber: Int
            var titles: [Title]
            var salaries: [Salary]
        }

        var departmentNumber: String
        var name: String
        var employees: [Member]
    }

    /// An owner with their pets and the pets' events.
    struct Owner: Decodable {
        struct OwnedPet: Decodable {
            var name: String
            var events: [Event]
        }

        struct Event: Decodable {
            var date: Date
            var type: String
            var remark: String?
        }

        var owner: String
        var pets: [OwnedPet]
    }

    @Test func threeLevelsDecodeIntoNestedDecodables() async throws {
        try await LiveSpout.with { server in
            let client = server.client()
            let tree = ["employees", "employees.titles", "employees.salaries"].map { URLQueryItem(name: "details", value: $0) }
            let department = try await client.object(Department.self, path: "/departments/d009", query: tree)
            #expect(department.departmentNumber == "d009" && department.name == "Customer Service")
            #expect(department.employees.count > 100)
            #expect(department.employees.allSatisfy { !$0.titles.isEmpty && !$0.salaries.isEmpty })
            let numbers = department.employees.map(\.employeeNumber)
            #expect(numbers == numbers.sorted())
            // A member's arrays are the employee's own.
            let member = try #require(department.employees.last)
            let own = try await client.object(
                EmployeeWithDetails.self, path: "/employees/\(member.employeeNumber)",
                query: [URLQueryItem(name: "details", value: "titles"), URLQueryItem(name: "details", value: "salaries")])
            #expect(own.titles == member.titles)
            #expect(own.salaries?.map(\.salary) == member.salaries.map(\.salary))

            // Owners, their pets and the pets' events, decoded row by row as they stream.
            let paths = [URLQueryItem(name: "details", value: "pets"), URLQueryItem(name: "details", value: "pets.events")]
            for format in [SpoutClientConfiguration(), SpoutClientConfiguration(rowFormat: .jsonLines)] {
                var owners: [Owner] = []
                for try await owner in try await server.client(format).rows(Owner.self, path: "/owners", query: paths) {
                    owners.append(owner)
                }
                #expect(owners.map(\.owner) == ["Benny", "Diane", "Gwen", "Harold"])
                #expect(owners.flatMap(\.pets).count == 9)
                #expect(owners.flatMap(\.pets).flatMap(\.events).count == 10)
                let buffy = owners.flatMap(\.pets).first { $0.name == "Buffy" }
                #expect(buffy?.events.map(\.type) == ["litter", "litter"])
                #expect(buffy?.events.first?.date == Date(timeIntervalSince1970: 740_793_600))
            }
        }
    }

    @Test func isoDatesWhenTheServerWritesThem() async throws {
        try await LiveSpout.with(environment: ["SPOUT_DATE_FORMAT": "iso-8601"]) { server in
            let greta = try await server.client(SpoutClientConfiguration(dateFormat: .iso8601))
                .object(EmployeeWithDetails.self, path: "/employees/10004", query: [URLQueryItem(name: "details", value: "titles")])
            #expect(greta.titles == [Self.greta.staff, Self.greta.senior])
            // A client configured for the other format fails loudly instead of guessing.
            await #expect(throws: SpoutClientError.self) {
                _ = try await server.client().object(
                    EmployeeWithDetails.self, path: "/employees/10004", query: [URLQueryItem(name: "details", value: "titles")])
            }
        }
    }

    /// An image endpoint (`result: bytes`): the eight bytes of PNG's signature, made by SQL.
    static let imageEndpoint = [
        "config/endpoints/client-image.yaml": """
        paths:
          /client-image:
            get:
              description: PNG's signature, as a stored image would be served.
              sql: SELECT X'89504E470D0A1A0A' AS png
              result: bytes
              mediaType: image/png

        """,
        "config/endpoints/client-upload.yaml": """
        paths:
          /client-upload:
            post:
              description: What an uploaded image holds, as the server received it.
              sql: SELECT length(:image) AS "size", hex(:image) AS "hex"
              result: object
              body: image
              mediaType: image/*
              parameters:
                image: {type: bytes, required: true}
          /client-form:
            post:
              description: What a form with a file held, as the server received it.
              sql: SELECT length(:image) AS "size", hex(:image) AS "hex", :caption AS "caption"
              result: object
              parameters:
                image: {type: bytes, required: true}
                caption:

        """,
    ]

    @Test func storedFilesLoadThroughTheCacheAndOffline() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spout-client-image-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = SpoutClientConfiguration(cache: SpoutCacheConfiguration(directory: directory, staleIfUnavailable: true))
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let client = try await LiveSpout.with(extraFiles: Self.imageEndpoint) { server in
            let loader = server.client(configuration)
            let first = try await loader.bytes(path: "/client-image", accept: "image/*")
            #expect(first.value == Data(signature))
            #expect(first.headers[.contentType] == "image/png")
            #expect(first.source == .network)
            let again = try await loader.bytes(path: "/client-image", accept: "image/*")
            #expect(again.value == Data(signature))
            #expect(again.source == .revalidated)
            let refused = await #expect(throws: SpoutClientError.self) {
                _ = try await loader.bytes(path: "/client-image", accept: "application/json")
            }
            if case .server(let error) = refused { #expect(error.status == 406) }
            return loader
        }
        // The server is gone: the image comes from disk, marked stale.
        let offline = try await client.bytes(path: "/client-image", accept: "image/*")
        #expect(offline.value == Data(signature))
        #expect(offline.source.isStale)
    }

    @Test func uploadsAsTheBodyAndInAForm() async throws {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        try await LiveSpout.with(extraFiles: Self.imageEndpoint) { server in
            // An upload is the file as the body, byte for byte.
            let reply = try await server.client().send(.post, path: "/client-upload", body: .file(signature, mediaType: "image/png"))
            struct Received: Decodable, Equatable { var size: Int; var hex: String }
            #expect(try reply.decode(Received.self) == Received(size: 8, hex: "89504E470D0A1A0A"))
            let refused = await #expect(throws: SpoutClientError.self) {
                _ = try await server.client().send(.post, path: "/client-upload", body: .file(signature, mediaType: "text/plain"))
            }
            if case .server(let error) = refused { #expect(error.status == 415 && error.parameter == "image", "\(error)") }
            // A form with a file: the file's bytes as they are (CR LF and dashes included), the
            // field's text, names that need escaping.
            let file: [UInt8] = signature + Array("\r\n--".utf8) + [0xFF]
            let form = try await server.client().send(
                .post, path: "/client-form",
                body: .multipart([.field("caption", "Grüße \"Rex\""), .file("image", file, filename: "a \"b\".png", mediaType: "image/png")]))
            struct Form: Decodable, Equatable { var size: Int; var hex: String; var caption: String }
            #expect(try form.decode(Form.self) == Form(size: 13, hex: "89504E470D0A1A0A0D0A2D2DFF", caption: "Grüße \"Rex\""))
        }
    }

    @Test func writesWithFormAndJSONBodies() async throws {
        try await LiveSpout.with { server in
            // Writes need a token: Diane creates the pet, gives it to Gwen, Gwen deletes it.
            let client = server.client(SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: "Diane")))
            let gwen = server.client(SpoutClientConfiguration(headers: try await LiveSpout.authorization(sub: "Gwen")))
            let form: [URLQueryItem] = [
                URLQueryItem(name: "name", value: "Rex & Co"),
                URLQueryItem(name: "species", value: "dog"), URLQueryItem(name: "sex", value: "m"),
                URLQueryItem(name: "birth", value: "2019-04-01"),
            ]
            let created = try await client.send(.post, path: "/pets", body: .form(form))
            #expect(created.status == 201)
            #expect(created.location?.hasPrefix("/pets/Rex") == true)

            struct Update: Encodable { var owner: String }
            let updated = try await client.send(.post, path: "/pets/Rex%20%26%20Co", body: try .json(Update(owner: "Gwen")))
            #expect(updated.status == 200)
            let pet = try updated.decode(Pet.self)
            #expect(pet == Pet(name: "Rex & Co", owner: "Gwen", species: "dog", sex: "m", birth: Date(timeIntervalSince1970: 1_554_076_800)))

            let duplicate = await #expect(throws: SpoutClientError.self) {
                _ = try await client.send(.post, path: "/pets", body: .form(form))
            }
            if case .server(let error) = duplicate {
                #expect(error.status == 409)
                // The server names the field to change; the client hands it on.
                #expect(error.parameter == "name" && error.value == "Rex & Co", "\(error)")
            }

            #expect(try await gwen.send(.delete, path: "/pets/Rex%20%26%20Co").status == 204)
            let gone = await #expect(throws: SpoutClientError.self) {
                _ = try await gwen.send(.delete, path: "/pets/Rex%20%26%20Co")
            }
            if case .server(let error) = gone { #expect(error.status == 404) }
        }
    }
}
