import Foundation
import SpoutClient

// Prints employees as they stream from a Spout server, through SpoutClient.
//
//     spout-client-example [--count] [BASE_URL] [PATH]
//
// BASE_URL defaults to http://127.0.0.1:8080, PATH to /employees. Each row prints as soon as
// it arrives; with --count only the number of rows prints, at the end (the tests run it so to
// measure the client's peak memory on a large stream). Exit status 1 on any error.

/// The shape of `GET /employees` rows; `hireDate` is optional so other paths decode too.
struct Employee: Decodable {
    var employeeNumber: Int
    var firstName: String
    var lastName: String
    var hireDate: Date?
}

var arguments = Array(CommandLine.arguments.dropFirst())
let countOnly = arguments.contains("--count")
arguments.removeAll { $0 == "--count" }
let baseURL = URL(string: arguments.first ?? "http://127.0.0.1:8080")
let path = arguments.count > 1 ? arguments[1] : "/employees"

guard let baseURL else {
    FileHandle.standardError.write(Data("spout-client-example: not a URL: \(arguments[0])\n".utf8))
    exit(2)
}

let client = SpoutClient(baseURL: baseURL)
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
    FileHandle.standardError.write(Data("spout-client-example: \(error)\n".utf8))
    exit(1)
}
