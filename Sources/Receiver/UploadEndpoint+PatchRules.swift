import SystemSupport
import UploadProtocol

/// What both stores (`UploadEndpoint` on a directory, `S3UploadEndpoint` on a bucket) read from a
/// PATCH and decide about its length, written once so the two answer alike.
extension UploadEndpoint {
    /// The answer to a request refused by these rules.
    struct Refusal: Error {
        let response: HTTPResponse
        init(_ response: HTTPResponse) { self.response = response }
    }

    /// A PATCH's head, read: the interop version it speaks, the offset it appends at, the length
    /// it announces, and whether it says it completes the upload (nil: it does not say).
    struct PatchHead {
        var version: Int
        var offset: Int64
        var announcedLength: Int64?
        var explicitCompletion: Bool?
    }

    /// Reads a PATCH's head for an upload created with `recordVersion`; the refusal to answer
    /// when it is malformed (415 for a version 6+ PATCH without the partial-upload media type, 400
    /// for a malformed offset, length or completion field).
    static func patchHead(_ head: HTTPRequestHead, recordVersion: Int) -> Result<PatchHead, Refusal> {
        let version = interopVersion(of: head) ?? recordVersion
        if version >= 6 {
            let mediaType = head[Header.contentType]?.split(separator: ";").first?.trimmingSpaces().lowercased()
            guard mediaType == ResumableUpload.partialUploadMediaType else {
                return .failure(Refusal(.text(415, "PATCH needs Content-Type: \(ResumableUpload.partialUploadMediaType)")))
            }
        }
        guard let offsetText = head[Header.uploadOffset], let offset = StructuredField.integer(offsetText), offset >= 0 else {
            return .failure(Refusal(.text(400, "missing or malformed Upload-Offset")))
        }
        var announcedLength: Int64?
        if let text = head[Header.uploadLength] {
            guard let n = StructuredField.integer(text), n >= 0 else { return .failure(Refusal(.text(400, "malformed Upload-Length"))) }
            announcedLength = n
        }
        let explicitCompletion = completionField(head, version: version)
        if case .some(.none) = explicitCompletion {
            return .failure(Refusal(.text(400, "malformed \(completionName(version))")))
        }
        return .success(PatchHead(version: version, offset: offset, announcedLength: announcedLength,
                                  explicitCompletion: explicitCompletion.flatMap { $0 }))
    }

    /// The upload's length after a PATCH whose body ends at `end`, and whether the PATCH completes
    /// it: an announced length must match the one known; the upload completes when the PATCH says
    /// so, else when it reaches the known length, else (no length known, nothing said) it does; it
    /// may not end past its length, nor complete short of it. The refusal (400, inconsistent
    /// length), in `problem`'s form, when the rules are broken.
    static func settleLength(known: Int64?, patch: PatchHead, end: Int64,
                             problem: (String) -> HTTPResponse) -> Result<(length: Int64?, complete: Bool), Refusal> {
        var length = known
        if let announced = patch.announcedLength {
            if let known, known != announced { return .failure(Refusal(problem("Upload-Length changed"))) }
            length = announced
        }
        let complete = patch.explicitCompletion ?? length.map { end == $0 } ?? true
        if let length, end > length || (complete && end != length) {
            return .failure(Refusal(problem("the upload would not end at Upload-Length")))
        }
        if complete && length == nil { length = end }
        return .success((length, complete))
    }
}
