import Foundation
import UploadProtocol

/// Proof of receipt: the photo counts as uploaded only once the server has shown that it holds
/// exactly this file's bytes.
extension UploadSession {
    /// The receipt for the server's final answer, once the server has shown that it holds exactly
    /// this file's bytes: the SHA-256 of the content it stored (`Repr-Digest`, or `sha256` in a
    /// JSON body) must be the file's. An answer without it is checked by asking the upload
    /// resource (`HEAD`) and then the receiver's digest lookup. A server that dedupes by
    /// `Idempotency-Key` alone would otherwise acknowledge other bytes stored under the photo's
    /// key, and a server that stores nothing (a captive portal, a wrong URL answering 2xx) would
    /// have the photo marked uploaded. Throws `bad-server-response` when the digests differ and
    /// `unverified-receipt` when no proof can be had, unless `acceptUnverified` (then the
    /// receipt is `unverified`).
    func verifiedReceipt(for response: HTTPResponse) async throws(TransferError) -> UploadReceipt {
        guard let own = try await completingHeaders().first(where: { $0.name == ResumableUpload.Header.idempotencyKey })?.value else {
            throw TransferError(.invalidRequest, "the upload has no content hash")
        }
        if let stored = Self.storedSHA256Hex(in: response) {
            guard own == stored else {
                throw TransferError(.badServerResponse,
                                    "the server acknowledged an object whose content is not this file's (SHA-256 \(stored.prefix(12))...)")
            }
            return receipt(for: response, proof: .verified)
        }
        if let proof = await proofFromUploadResource(sha256Hex: own) {
            var done = receipt(for: response, proof: .verified)
            done.serverID = done.serverID ?? proof.headers[ResumableUpload.Header.serverResourceID]
            return done
        }
        if let stored = await uploader.alreadyStored(sha256Hex: own) {
            var done = receipt(for: response, proof: .verified)
            done.serverID = done.serverID ?? stored.serverID
            return done
        }
        if configuration.acceptUnverified { return receipt(for: response, proof: .unverified) }
        throw TransferError(.unverifiedReceipt, """
            the server accepted the upload but did not show that it holds these bytes (no Repr-Digest of the stored \
            content in its answer, its upload resource or its digest lookup), so the photo is not marked uploaded. \
            Pass --accept-unverified to accept such answers (marked uploaded-unverified)
            """, httpStatus: response.status, responseHeaders: response.headers)
    }

    /// The upload resource's own answer (`HEAD`), when it says the upload is complete at the
    /// file's length and names this content; nil otherwise or on any failure.
    private func proofFromUploadResource(sha256Hex own: String) async -> HTTPResponse? {
        guard let location else { return nil }
        let request = HTTPRequest(method: "HEAD", url: location, headers: uploader.baseHeaders(interopVersion: interopVersion))
        guard let answer = try? await uploader.client.send(request), (200...299).contains(answer.status),
              ResumableUpload.isComplete(headers: answer.headers) == true,
              answer.headers[ResumableUpload.Header.uploadOffset].flatMap(StructuredField.integer) == size,
              Self.storedSHA256Hex(in: answer) == own else { return nil }
        return answer
    }

    /// The stored object's SHA-256 (lowercase hex) named by a final response, or nil.
    static func storedSHA256Hex(in response: HTTPResponse) -> String? {
        if let field = response.headers[ResumableUpload.Header.reprDigest] {
            return ResumableUpload.sha256(fromReprDigest: field).map(Hex.string)
        }
        struct Body: Decodable { let sha256: String? }
        guard response.headers["content-type"]?.hasPrefix("application/json") == true,
              let body = try? JSONDecoder().decode(Body.self, from: Data(response.body)),
              let hex = body.sha256, let bytes = Hex.bytes(fromHex: hex), bytes.count == 32 else { return nil }
        return hex.lowercased()
    }

    private func receipt(for response: HTTPResponse, proof: ReceiptProof) -> UploadReceipt {
        UploadReceipt(serverID: response.headers[ResumableUpload.Header.serverResourceID], status: response.status,
                      headers: response.headers, bytesSent: bytesSent, location: location, resumable: true, proof: proof,
                      resumedFromOffset: resumedFrom)
    }
}
