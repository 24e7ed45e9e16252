import Foundation

/// One part of a `multipart/form-data` body (``SpoutRequestBody/multipart(_:)``): a text field,
/// or a file with its name and media type, as an HTML form with a file input sends them.
public struct SpoutFormPart: Sendable, Equatable {
    /// The parameter the part is for.
    public var name: String
    /// The file's name, for a file part.
    public var filename: String?
    /// The part's `Content-Type`, for a file part.
    public var mediaType: String?
    /// The content: a field's UTF-8, a file's bytes as they are.
    public var bytes: [UInt8]

    public init(name: String, filename: String? = nil, mediaType: String? = nil, bytes: [UInt8]) {
        self.name = name
        self.filename = filename
        self.mediaType = mediaType
        self.bytes = bytes
    }

    /// A text field.
    public static func field(_ name: String, _ value: String) -> SpoutFormPart {
        SpoutFormPart(name: name, bytes: Array(value.utf8))
    }

    /// A file: taken as it is by a `bytes` parameter named `name`; `bytes` is `Data` or `[UInt8]`.
    public static func file(_ name: String, _ bytes: some Sequence<UInt8>, filename: String, mediaType: String) -> SpoutFormPart {
        SpoutFormPart(name: name, filename: filename, mediaType: mediaType, bytes: Array(bytes))
    }

    /// The part's head: `Content-Disposition` with its name (and file name), then its type.
    /// A quote, CR or LF in a name is percent-encoded, as browsers send them (RFC 7578 §2).
    var head: String {
        var head = "Content-Disposition: form-data; name=\"\(Self.quoted(self.name))\""
        if let filename = self.filename { head += "; filename=\"\(Self.quoted(filename))\"" }
        if let mediaType = self.mediaType { head += "\r\nContent-Type: \(mediaType)" }
        return head + "\r\n\r\n"
    }

    private static func quoted(_ text: String) -> String {
        text.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }
}
