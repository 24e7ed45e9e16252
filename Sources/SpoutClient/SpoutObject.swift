import HTTPTypes

/// A single object and where it came from (the network, a revalidated or a stale copy).
public struct SpoutObject<Value> {
    public var value: Value
    public var source: ResponseSource
    public var headers: HTTPFields
}

extension SpoutObject: Sendable where Value: Sendable {}
