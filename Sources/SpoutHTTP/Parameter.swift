import SpoutCore

/// A typed parameter a route declares; the layer converts the request's arguments for it.
///
/// Arguments come from the path keys of the route's template, the query string and the body
/// (form, multipart or JSON object). A parameter with no argument gets ``defaultValue`` when
/// there is one, fails with 400 when ``isRequired``, and is otherwise `.null` (an empty
/// `.array` for list types). An empty text value (`?n=`) counts as absent for every type but
/// `.string`.
public struct Parameter: Sendable, Hashable {
    public var name: String
    public var type: ParameterType
    public var isRequired: Bool
    /// The value used when the request has no argument for this parameter.
    public var defaultValue: SQLValue?
    /// When set, every converted value (each element of a list) must be one of these.
    public var allowedValues: [SQLValue]?
    /// Bounds every converted value (each element of a list) must keep.
    public var limits: ParameterLimits
    /// Free text for API documentation.
    public var summary: String?

    /// - Precondition: `type` is not a list of lists.
    public init(
        _ name: String,
        _ type: ParameterType = .string,
        required: Bool = false,
        defaultValue: SQLValue? = nil,
        allowedValues: [SQLValue]? = nil,
        limits: ParameterLimits = ParameterLimits(),
        summary: String? = nil
    ) {
        precondition(!type.elementType.isList, "lists of lists are not supported (parameter \(name))")
        self.name = name
        self.type = type
        self.isRequired = required
        self.defaultValue = defaultValue
        self.allowedValues = allowedValues
        self.limits = limits
        self.summary = summary
    }
}
