import Foundation

/// What a client sends about an object besides its bytes, kept beside it.
struct ObjectMetadata: Codable, Sendable, Equatable {
    var idempotencyKey: String?
    /// The `Repr-Digest` SHA-256 the bytes must match, if the client sent one.
    var expectedSHA256: [UInt8]?
    var filename: String?
    /// The file name's exact bytes, percent-encoded, when they are not valid UTF-8 (`filename`
    /// then shows them with U+FFFD).
    var filenameEncoded: String?
    /// The `X-Verdict` header as sent (compact JSON).
    var verdict: String?
    /// The `X-Photo-*` headers as sent.
    var provenance: ObjectProvenance?
    /// The device whose token created the upload (`Principal.device`), never the token. An upload
    /// belongs to it: another device's token (unless admin) finds no such upload.
    var device: String?

    /// Fills fields that are still unset from another request's metadata.
    mutating func merge(_ other: ObjectMetadata) {
        idempotencyKey = idempotencyKey ?? other.idempotencyKey
        expectedSHA256 = expectedSHA256 ?? other.expectedSHA256
        if filename == nil {
            filename = other.filename
            filenameEncoded = other.filenameEncoded
        }
        verdict = verdict ?? other.verdict
        provenance = provenance ?? other.provenance
    }
}
