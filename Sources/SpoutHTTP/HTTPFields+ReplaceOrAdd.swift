import HTTPTypes

extension HTTPFields {
    /// Removes every field named `name`, then appends `name: value`, which goes last, as with
    /// NIO's `HTTPHeaders.replaceOrAdd`.
    ///
    /// Setting `self[name]` would instead overwrite the first such field where it stands; Spout's
    /// responses have always carried a replaced field last, and their bytes stay the same.
    public mutating func replaceOrAdd(_ name: HTTPField.Name, _ value: String) {
        self[name] = nil
        self.append(HTTPField(name: name, value: value))
    }
}
