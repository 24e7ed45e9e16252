import Foundation
import SpoutClient

// Prints employees as they stream from a Spout server, through SpoutClient.
//
//     spout-client-example [--count] [--ca FILE] [--pin PIN] [--identity] [BASE_URL] [PATH]
//
// BASE_URL defaults to http://127.0.0.1:8080, PATH to /employees; an https:// URL is verified
// against the system's roots plus the PEM certificate(s) of --ca (a private CA), and, with
// --pin (repeatable), the server key's SHA-256 pin. Each row prints as soon as it arrives; with
// --count only the number of rows prints, at the end (the tests run it so to measure the
// client's peak memory on a large stream). --identity asks for an uncompressed body (gzip is
// asked for by default). Exit status 1 on any error.

/// The shape of `GET /employees` rows; `hireDate` is optional so other paths decode too.
struct Employee: Decodable {
    var employeeNumber: Int
    var firstName: String
    var lastName: String
    var hireDate: Date?
}

var arguments = Array(CommandLine.arguments.dropFirst())
let countOnly = arguments.contains("--count")
let identity = arguments.contains("--identity")
arguments.removeAll { $0 == "--count" || $0 == "--identity" }

/// Removes every `name VALUE` pair from `arguments` and returns the values.
func takeOption(_ name: String, from arguments: inout [String]) -> [String] {
    var values: [String] = []
    while let index = arguments.firstIndex(of: name), index + 1 < arguments.count {
        values.append(arguments[index + 1])
        arguments.removeSubrange(index...(index + 1))
    }
    return values
}

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("spout-client-example: \(message)\n".utf8))
    exit(status)
}

let authorities = takeOption("--ca", from: &arguments)
let pins = takeOption("--pin", from: &arguments)
let baseURL = URL(string: arguments.first ?? "http://127.0.0.1:8080")
let path = arguments.count > 1 ? arguments[1] : "/employees"

guard let baseURL else { fail("not a URL: \(arguments[0])", status: 2) }
var trustRoots: [String] = []
for file in authorities {
    guard let pem = try? String(contentsOfFile: file, encoding: .utf8) else { fail("cannot read \(file)", status: 2) }
    trustRoots.append(pem)
}

let transport = NIOHTTPTransport(tls: SpoutTLSConfiguration(additionalTrustRootsPEM: trustRoots, pinnedKeys: pins), decompresses: !identity)
let client = SpoutClient(baseURL: baseURL, transport: transport)
do {
    var count = 0
    let dateFormat = Date.ISO8601FormatStyle().year().month().day()
    for try await employee in try await client.rows(Employee.self, path: path) {
        count += 1
        if !countOnly {
            let hired = employee.hireDate.map { " hired \($0.formatted(dateFormat))" } ?? ""
            print("\(employee.employeeNumber) \(employee.firstName) \(employee.lastName)\(hired)")
        }
    }
    print(countOnly ? "\(count)" : "\(count) employees")
} catch {
    fail("\(error)", status: 1)
}
