import Testing

@testable import SpoutClient

/// The SHA-256 written in SpoutClient for Linux (``SHA256Hash/portableHash(_:)``), against
/// known digests.
@Suite struct SHA256HashTests {
    static func hex(_ digest: [UInt8]) -> String {
        digest.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// FIPS 180-4's examples (NIST's "Example Algorithms", SHA-256): one block, two blocks, and
    /// a million times "a".
    @Test(arguments: [
        ("abc", 1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ("a", 1_000_000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
    ])
    func theStandardsExamples(text: String, repeats: Int, expected: String) {
        let message = Array(String(repeating: text, count: repeats).utf8)
        #expect(Self.hex(SHA256Hash.portableHash(message)) == expected)
        #expect(Self.hex(SHA256Hash.hash(message)) == expected)
    }

    /// Lengths around the padding's boundaries (55 bytes fit one block with the length, 56 need
    /// two), the bytes `(i * 7 + 3) % 256`; the digests were computed by Python's hashlib.
    @Test(arguments: [
        (0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (1, "084fed08b978af4d7d196a7446a86b58009e636b611db16211b65a9aadff29c5"),
        (55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"),
        (56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"),
        (57, "35df609437dcfea3279283ab79fd554e2bf78f8f7ae2de532d8ee300b09e8f73"),
        (63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"),
        (64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"),
        (65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"),
        (119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"),
        (120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"),
        (128, "d2742f1f4ac6bb7ca2b239ee18402ba8b3f9f8e652d2a72973c2b9ba11c08cf6"),
    ])
    func lengthsAroundTheBlockBoundaries(length: Int, expected: String) {
        let message = (0..<length).map { UInt8(($0 * 7 + 3) % 256) }
        #expect(Self.hex(SHA256Hash.portableHash(message)) == expected)
        #expect(SHA256Hash.hex(message) == expected)
    }
}
