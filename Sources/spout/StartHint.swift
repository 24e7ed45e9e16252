import SpoutEndpoints

/// The request the "listening on" line suggests (`try=curl …`).
enum StartHint {
    /// The shipped example's request, `GET /employees/10004?details=titles`, when `endpoints`
    /// serve it (that path with a `titles` detail); for any other service its OpenAPI
    /// document, which every service serves, so a service of one's own is never pointed at
    /// sample data it does not have.
    static func curl(base: String, endpoints: EndpointSet) -> String {
        let servesExample = endpoints.endpoints.contains { endpoint in
            endpoint.method == .get && endpoint.path == "/employees/{employeeNumber}"
                && endpoint.parameters.contains { $0.name == endpoint.detailsParameter && $0.allowedValues?.contains(.text("titles")) == true }
        }
        return servesExample ? "curl '\(base)/employees/10004?details=titles'" : "curl '\(base)\(EndpointSet.openAPIPath)'"
    }
}
