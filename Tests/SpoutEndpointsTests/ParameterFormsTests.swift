import Foundation
import SpoutCore
@testable import SpoutEndpoints
import SpoutHTTP
import Testing

/// The two forms of an endpoint's `parameters` (docs/endpoints.md, "Parameters"): a list of
/// mappings with `name`, and a mapping from names to the same mappings without `name`.
@Suite struct ParameterFormsTests {
    typealias Fixture = EndpointValidationTests.Fixture

    /// The parameters of the single endpoint of an endpoint file whose `parameters` is `block`
    /// (indented under the endpoint).
    static func parameters(_ block: String) throws -> [Parameter] {
        let fixture = try Fixture()
        let file = try fixture.endpointFile("api.yaml", Self.endpoint(block))
        let endpoints = try fixture.load([file]).endpoints
        return try #require(endpoints.first).parameters
    }

    static func endpoint(_ block: String) -> String {
        """
        paths:
          /things/{id}:
            get:
              sql: SELECT :id AS id, :kind AS kind, :since AS since
              parameters:
        \(block.split(separator: "\n").map { "        " + $0 }.joined(separator: "\n"))
        """
    }

    @Test func theMappingFormDeclaresTheSameParametersAsTheList() throws {
        let list = try Self.parameters("""
            - {name: kind, type: string, allowedValues: [a, b], default: a, description: The kind.}
            - name: id
              type: integer
            - {name: since, type: date}
            """)
        let mapping = try Self.parameters("""
            kind: {type: string, allowedValues: [a, b], default: a, description: The kind.}
            id:
              type: integer
            since: {type: date}
            """)
        #expect(mapping == list)
        #expect(mapping.map(\.name) == ["kind", "id", "since"])
        #expect(mapping[1].type == .integer && mapping[1].isRequired)
        #expect(mapping[0].defaultValue == .text("a"))
    }

    @Test func anEmptyValueTakesEveryDefault() throws {
        let parameters = try Self.parameters("""
            id:
            kind:
            since: ~
            """)
        #expect(parameters == [Parameter("id", .string, required: true), Parameter("kind"), Parameter("since")])
    }

    @Test(
        "a parameter declaration of the wrong shape is an error at its line",
        arguments: [
            ("id: {name: id, type: integer}", 6, "parameter 'id' is named by its key in the mapping form of 'parameters'; remove 'name'"),
            ("id: integer", 6, "parameter 'id' must be a mapping (key: value lines)"),
            ("id: {tpye: integer}", 6, "unknown key 'tpye' in parameter 'id' (known keys: type, required, default, allowedValues, minimum, maximum, minLength, maxLength, description)"),
            ("id: {}\nid: {}", 7, "duplicate key 'id' in the same mapping"),
            ("kind-of: {}", 6, "parameter name 'kind-of' must be letters, digits and underscores (it is used as :kind-of in SQL)"),
            (
                "id", 6,
                "'parameters' must be a list of parameters (- {name: id, type: integer}) "
                    + "or a mapping from parameter names to their keys (id: {type: integer})"
            ),
        ])
    func wrongShape(block: String, line: Int, message: String) throws {
        let fixture = try Fixture()
        let error = try fixture.error(Self.endpoint(block))
        #expect(error?.message == message)
        #expect(error?.line == line)
    }
}
