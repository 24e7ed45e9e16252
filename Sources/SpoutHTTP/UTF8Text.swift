import SpoutCore

/// Text from bytes a request sent, which must be UTF-8: what the body and record readers
/// (``JSONArguments``, ``CSVRecordReader``) make their keys and values with.
enum UTF8Text {
    /// `bytes` as text, or nil when they are not UTF-8. ASCII bytes, most keys and values,
    /// are taken without validating them as UTF-8 first (ASCII is always valid).
    static func validated(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        if JSONText.isASCII(bytes) { return String(decoding: bytes, as: UTF8.self) }
        return String(validating: bytes, as: UTF8.self)
    }
}
