import Foundation
import SystemSupport
import UploadProtocol

/// Why a transfer failed, sanitised for the store, the logs and the terminal: a stable domain and
/// code, a short message, the HTTP status when there was one, and whether a retry can help
/// (DESIGN.md, Retry policy). It never carries a token, a URL's query or a response body (save a
/// 403 problem's short `detail`, which says which scope the token lacks), nor a control
/// character: what a message quotes of a server (a Location, an S3 code, that detail) is escaped
/// (`TerminalText.escaped`), so printing it cannot drive the user's terminal.
public struct TransferError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error domain stored beside the code.
    public static let domain = "transfer"

    /// What the retry policy should do with a failure.
    public enum Classification: String, Sendable, Codable {
        /// Try again later (timeouts, lost connections, DNS, 408, 429, 5xx): counts as an attempt.
        case transient
        /// Do not retry without a new destination or token (4xx, bad server responses, unreadable file).
        case permanent
        /// Stopped on purpose (cancelled, runner terminating): leave the work pending, charge nothing.
        case deferred
    }

    /// The stable classes of transfer failure.
    public enum Code: String, Sendable, Codable, CaseIterable {
        /// No response within the connect timeout, or the transfer stalled below the low-speed limit.
        case timedOut = "timed-out"
        /// The server refused the connection or could not be reached.
        case connectionFailed = "connection-failed"
        /// The connection broke before a complete response arrived.
        case connectionLost = "connection-lost"
        /// The host name did not resolve.
        case hostNotFound = "host-not-found"
        /// The TLS handshake or certificate verification failed.
        case tlsFailure = "tls-failure"
        /// The server answered 5xx.
        case serverError = "server-error"
        /// The server answered 408.
        case requestTimeout = "request-timeout"
        /// The server answered 429.
        case rateLimited = "rate-limited"
        /// The server answered 401 or 403: the token is missing, wrong or not allowed.
        case unauthorized
        /// The receiver refused the upload because its account's quota would be exceeded (`507`
        /// with `photodrain serve`'s quota problem): every photo would be refused alike.
        case quotaExceeded = "quota-exceeded"
        /// The server answered 404 where a resource must exist (the upload endpoint itself).
        case notFound = "not-found"
        /// The file is larger than the server accepts, or appends could not be shrunk any further.
        case tooLarge = "too-large"
        /// The server rejected the request with another 4xx (or a redirect, which uploads never follow).
        case rejected
        /// The server's answer broke the protocol: a missing Location, a malformed or impossible offset.
        case badServerResponse = "bad-server-response"
        /// The local file could not be opened or read, or changed size during the upload.
        case fileUnreadable = "file-unreadable"
        /// The destination, metadata or configuration is unusable (bad URL, bad digest, unknown version).
        case invalidRequest = "invalid-request"
        /// Saving the upload checkpoint failed, so no byte was sent.
        case checkpointFailed = "checkpoint-failed"
        /// The transfer was cancelled.
        case cancelled
        /// libcurl failed for another reason.
        case transportFailure = "transport-failure"
        /// The destination answered like something other than an upload receiver: a web page, a
        /// redirect to a login page, or no protocol at all (a captive portal or a wrong URL); or it
        /// named an upload URL on another origin, where neither the photo nor the token may go.
        case notAReceiver = "not-a-receiver"
        /// The destination accepted the upload but gave no proof that it holds exactly these bytes
        /// (no digest to compare, or an answer that contradicts itself), so it is not uploaded.
        case unverifiedReceipt = "unverified-receipt"
        /// The destination holds (or computed) other bytes than were sent: the bytes changed on
        /// the way. Transient for one upload (it is sent again); when it persists, every photo
        /// would fail alike on that path, so the runners charge no photo for it.
        case corruptedInTransit = "corrupted-in-transit"
    }

    /// The class of failure.
    public let code: Code
    /// A short, sanitised explanation a person can act on, its control characters escaped.
    public let message: String
    /// The HTTP status of the response that caused the failure, when there was one.
    public let httpStatus: Int?
    /// The libcurl result code behind a transport failure (e.g. 56 for a receive error), when there was one.
    public let curlCode: Int?
    /// Whether a retry can help.
    public let classification: Classification
    /// The headers of the response that caused the failure (names lowercased; empty when there was
    /// no response), kept on the failed job like a success's, so `Retry-After` can defer its retry.
    public var responseHeaders: [String: String]

    /// For a transient failure whose response asked to wait (`Retry-After`, received at `now`):
    /// the time before which the request should not be tried again.
    public func retryNotBefore(now: Date) -> Date? {
        isTransient ? RetryAfter.notBefore(headers: responseHeaders, now: now) : nil
    }

    /// Creates an error; the classification defaults to the code's usual one. Control characters
    /// in `message` (which may quote a server) are escaped.
    public init(_ code: Code, _ message: String, httpStatus: Int? = nil, curlCode: Int? = nil,
                classification: Classification? = nil, responseHeaders: [String: String] = [:]) {
        self.code = code
        self.responseHeaders = responseHeaders
        self.message = TerminalText.escaped(message)
        self.httpStatus = httpStatus
        self.curlCode = curlCode
        self.classification = classification ?? Self.defaultClassification(of: code)
    }

    /// True when the retry policy should try again later.
    public var isTransient: Bool { classification == .transient }

    /// `transfer/<code>[ http <status>][ curl <code>]: <message>`.
    public var description: String {
        let status = httpStatus.map { " http \($0)" } ?? ""
        let curl = curlCode.map { " curl \($0)" } ?? ""
        return "\(Self.domain)/\(code.rawValue)\(status)\(curl): \(message)"
    }

    /// The error for a final HTTP status that ends an upload. `creation` is true when the request
    /// targeted the upload endpoint itself, where a 404 means the destination is wrong. `headers`
    /// are the response's (names lowercased), kept as `responseHeaders`.
    /// A `403` whose body is an RFC 9457 problem (`photodrain serve` sends one when a device
    /// token's scope does not allow the request) has its `detail` in the message, escaped and cut
    /// to 300 characters: "the server refused the token: this request needs a token with the
    /// read scope; ...". It stays `unauthorized`, a refusal of the destination: nothing is charged.
    /// A `507` with `photodrain serve`'s quota problem is `quotaExceeded` (a refusal too), its
    /// detail in the message the same way; any other `507` stays a server error, retried. A `429`
    /// with `photodrain serve`'s too-many-failed-authentications problem answers a token that is
    /// not valid (from an address that failed too often): `unauthorized`, as the `401` before it.
    public static func forStatus(_ status: Int, creation: Bool = false, headers: [String: String] = [:],
                                 body: [UInt8] = []) -> TransferError {
        var error = statusError(status, creation: creation)
        if status == 403, let detail = problemDetail(headers: headers, body: body) {
            error = TransferError(.unauthorized, "the server refused the token: \(detail)", httpStatus: status)
        } else if status == 429, problemType(headers: headers, body: body) == ResumableUpload.tooManyFailedAuthenticationsProblem {
            let detail = problemDetail(headers: headers, body: body).map { ": \($0)" } ?? ""
            error = TransferError(.unauthorized, "the server refused the token\(detail)", httpStatus: status)
        } else if status == 507, problemType(headers: headers, body: body) == ResumableUpload.quotaExceededProblem {
            let detail = problemDetail(headers: headers, body: body).map { ": \($0)" } ?? ""
            error = TransferError(.quotaExceeded, "the receiver refused the upload: the account's quota is used up\(detail)", httpStatus: status)
        }
        error.responseHeaders = headers
        return error
    }

    /// The `type` of an `application/problem+json` body; nil when the body is no problem.
    static func problemType(headers: [String: String], body: [UInt8]) -> String? {
        guard headers["content-type"]?.lowercased().hasPrefix("application/problem+json") == true, !body.isEmpty,
              let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        return object["type"] as? String
    }

    /// The `detail` of an `application/problem+json` body, escaped for a terminal and cut to 300
    /// characters; nil when the body is no problem or has no detail.
    static func problemDetail(headers: [String: String], body: [UInt8]) -> String? {
        guard headers["content-type"]?.lowercased().hasPrefix("application/problem+json") == true, !body.isEmpty,
              let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let detail = object["detail"] as? String, !detail.isEmpty else { return nil }
        let cut = detail.count > 300 ? String(detail.prefix(300)) + "…" : detail
        return TerminalText.escaped(cut)
    }

    private static func statusError(_ status: Int, creation: Bool) -> TransferError {
        switch status {
        case 408: return TransferError(.requestTimeout, "the server timed out waiting for the request", httpStatus: status)
        case 429: return TransferError(.rateLimited, "the server asked to slow down", httpStatus: status)
        case 500...599: return TransferError(.serverError, "the server failed to handle the upload", httpStatus: status)
        case 401, 403: return TransferError(.unauthorized, "the server refused the credentials", httpStatus: status)
        case 404 where creation: return TransferError(.notFound, "the upload endpoint does not exist", httpStatus: status)
        case 413: return TransferError(.tooLarge, "the server refused the upload as too large", httpStatus: status)
        case 300...399: return TransferError(.rejected, "the server redirected the upload; uploads do not follow redirects", httpStatus: status)
        case 400...499: return TransferError(.rejected, "the server rejected the request", httpStatus: status)
        default: return TransferError(.badServerResponse, "the server answered with an unexpected status", httpStatus: status)
        }
    }

    private static func defaultClassification(of code: Code) -> Classification {
        switch code {
        case .timedOut, .connectionFailed, .connectionLost, .hostNotFound, .serverError, .requestTimeout,
             .rateLimited, .checkpointFailed, .transportFailure, .corruptedInTransit:
            return .transient
        case .tlsFailure, .unauthorized, .quotaExceeded, .notFound, .tooLarge, .rejected, .badServerResponse, .fileUnreadable,
             .invalidRequest, .notAReceiver, .unverifiedReceipt:
            return .permanent
        case .cancelled:
            return .deferred
        }
    }
}
