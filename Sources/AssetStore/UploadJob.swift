import Foundation
import UploadProtocol

/// An upload handed to the transfer agent: the seeds' job model, kept in the store.
///
/// Life cycle: `registered` -> `pending` -> `succeeded` | `failed`; `cancelled` from registered or
/// pending. Acknowledging a finished job copies its outcome onto the photo's row and removes it.
public struct UploadJob: Sendable, Equatable, Codable {
    public enum State: String, Sendable, Codable, CaseIterable {
        case registered, pending, succeeded, failed, cancelled
    }

    /// Which jobs a fetch asks for.
    public enum Action: Sendable {
        /// Failed with a transient error, under the retry limit.
        case retry
        /// Succeeded or failed: their outcome waits to be recorded.
        case acknowledge
        /// Registered or pending: the ones to perform, and the cancellable ones.
        case process
    }

    /// A sanitised error: no token, no body.
    public struct Failure: Sendable, Equatable, Codable {
        public var domain: String
        public var code: String
        public var message: String
        public var transient: Bool

        public init(domain: String, code: String, message: String, transient: Bool) {
            self.domain = domain
            self.code = code
            self.message = message
            self.transient = transient
        }
    }

    public let id: Int64
    /// nil when the photo was removed after the job was made.
    public let assetID: Int64?
    public let assetGeneration: Int
    public let state: State
    public let destination: String
    public let requestHeaders: [String: String]
    /// The upload resource's URL, once the server gave one.
    public let resumeURL: String?
    /// Bytes the server confirmed.
    public let confirmedOffset: Int64
    public let responseStatus: Int?
    /// Response headers, names lowercased.
    public let responseHeaders: [String: String]
    public let failure: Failure?
    /// For a transient failure whose server asked to wait (`Retry-After`): `wake` does not retry it before this.
    public let retryNotBefore: Date?
    /// For a succeeded job: the id the destination gave the stored object (the receiver's object
    /// id, an S3 key and ETag), if it named one.
    public let serverID: String?
    /// For a succeeded job: whether the destination proved it holds the bytes.
    public let proof: ReceiptProof?
    /// For a succeeded job: the destination already held the content, so no byte was sent.
    public let alreadyStored: Bool

    static let columns = """
        id, asset_id, asset_generation, state, destination, request_headers, resume_url, confirmed_offset, \
        response_status, response_headers, error_domain, error_code, error_message, error_transient, retry_not_before, proof, already_stored, \
        server_id
        """

    init(row r: [SQLValue]) {
        id = Int64(r[0].int ?? 0)
        assetID = r[1].int.map(Int64.init)
        assetGeneration = r[2].int ?? 0
        state = State(rawValue: r[3].string ?? "") ?? .failed
        destination = r[4].string ?? ""
        requestHeaders = JSONText.decode(r[5].string)
        resumeURL = r[6].string
        confirmedOffset = Int64(r[7].int ?? 0)
        responseStatus = r[8].int
        responseHeaders = JSONText.decode(r[9].string)
        if let domain = r[10].string {
            failure = Failure(domain: domain, code: r[11].string ?? "", message: r[12].string ?? "",
                              transient: (r[13].int ?? 0) != 0)
        } else {
            failure = nil
        }
        retryNotBefore = r[14].double.map { Date(timeIntervalSince1970: $0) }
        proof = r.count > 15 ? r[15].string.flatMap(ReceiptProof.init(rawValue:)) : nil
        alreadyStored = r.count > 16 ? (r[16].int ?? 0) != 0 : false
        serverID = r.count > 17 ? r[17].string : nil
    }
}

/// How a performed job ended, as the agent reports it.
public enum JobResult: Sendable, Equatable {
    /// The destination acknowledged the upload as `serverID`; `proof` says whether it showed it
    /// holds the bytes. `alreadyStored`: the destination had the content already and no byte was
    /// sent. `headers` are the response's, kept for diagnosis: nothing reads a value back from them.
    case succeeded(status: Int, serverID: String?, headers: [String: String], proof: ReceiptProof = .verified, alreadyStored: Bool = false)
    /// `retryNotBefore`: the server asked (for a transient failure) not to be tried again before then.
    case failed(status: Int?, headers: [String: String], failure: UploadJob.Failure, retryNotBefore: Date? = nil)
}

/// Header maps stored as JSON text.
enum JSONText {
    static func encode(_ headers: [String: String]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: headers, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The map `encode` wrote; anything else gives an empty map.
    static func decode(_ text: String?) -> [String: String] {
        guard let text, let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String] else {
            return [:]
        }
        return object
    }
}
