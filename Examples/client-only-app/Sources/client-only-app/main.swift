import Foundation
import SpoutClient

/// One employee as `GET /employees` returns it (only the fields this app shows).
struct Employee: Decodable {
    var employeeNumber: Int
    var firstName: String
    var lastName: String
}

let server = URL(string: CommandLine.arguments.dropFirst().first ?? "http://127.0.0.1:8080")!
let client = SpoutClient(baseURL: server)
let firstPage = [URLQueryItem(name: "pageSize", value: "10")]
for try await employee in try await client.rows(Employee.self, path: "/employees", query: firstPage) {
    print(employee.employeeNumber, employee.firstName, employee.lastName)
}
