/// An HTTP request method, spelled as on the wire (`GET`, `POST`, ...).
///
/// A struct rather than an enum so that any token a client sends can be represented; the
/// common methods are static members.
public struct RequestMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible, Comparable {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public static let get = RequestMethod(rawValue: "GET")
    public static let head = RequestMethod(rawValue: "HEAD")
    public static let post = RequestMethod(rawValue: "POST")
    public static let put = RequestMethod(rawValue: "PUT")
    public static let patch = RequestMethod(rawValue: "PATCH")
    public static let delete = RequestMethod(rawValue: "DELETE")
    public static let options = RequestMethod(rawValue: "OPTIONS")

    public var description: String { self.rawValue }

    public static func < (lhs: RequestMethod, rhs: RequestMethod) -> Bool { lhs.rawValue < rhs.rawValue }
}
