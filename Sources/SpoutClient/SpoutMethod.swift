/// The methods of ``SpoutClient/send(_:path:query:body:)``.
public enum SpoutMethod: String, Sendable {
    case post = "POST"
    case put = "PUT"
    case patch = "PATCH"
    case delete = "DELETE"
}
