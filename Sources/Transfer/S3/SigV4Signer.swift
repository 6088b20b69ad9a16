import UploadProtocol
import Foundation

/// AWS Signature Version 4 with header authentication, computed with libcrypto's SHA-256 and
/// HMAC-SHA256 (`FileDigest`). It signs exactly the headers it is given plus `x-amz-date` (and
/// `x-amz-security-token` with session credentials), so what libcurl sends must be what was signed:
/// pass `host` explicitly. The path must already be URI-encoded (S3 paths are encoded once, never
/// twice); query names and values are given raw and encoded here.
public struct SigV4Signer: Sendable {
    /// The SHA-256 of an empty body, hex.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// The payload hash value that leaves the body unsigned.
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"
    /// The signing algorithm's name.
    static let algorithm = "AWS4-HMAC-SHA256"

    /// The key pair (and session token) that signs.
    public let credentials: S3Credentials
    /// The region in the credential scope, e.g. `us-east-1`.
    public let region: String
    /// The service in the credential scope, e.g. `s3`.
    public let service: String

    /// Creates a signer for one region and service.
    public init(credentials: S3Credentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// The headers to add to a request so it is signed: `x-amz-date`, `x-amz-security-token` when
    /// the credentials carry one, and `Authorization`. `headers` are the other headers that will be
    /// sent (all are signed; include `host`). `payloadHash` is the body's hex SHA-256 or
    /// `UNSIGNED-PAYLOAD`. Throws `TransferError` only if libcrypto fails.
    public func signatureHeaders(method: String, path: String, query: [(name: String, value: String)],
                                 headers: [(name: String, value: String)], payloadHash: String,
                                 date: Date) throws(TransferError) -> [(name: String, value: String)] {
        let stamp = Self.timestamp(date)
        var added: [(name: String, value: String)] = [("x-amz-date", stamp)]
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        let canonical = canonicalRequest(method: method, path: path, query: query, headers: headers + added,
                                         payloadHash: payloadHash)
        let signature = try self.signature(canonicalRequest: canonical.text, timestamp: stamp)
        let scope = credentialScope(day: String(stamp.prefix(8)))
        added.append(("Authorization", "\(Self.algorithm) Credential=\(credentials.accessKeyID)/\(scope), "
                      + "SignedHeaders=\(canonical.signedHeaders), Signature=\(signature)"))
        return added
    }

    /// The canonical request (step 1 of SigV4) and its signed-header list.
    public func canonicalRequest(method: String, path: String, query: [(name: String, value: String)],
                                 headers: [(name: String, value: String)], payloadHash: String) -> (text: String, signedHeaders: String) {
        var merged: [String: [String]] = [:]
        for (name, value) in headers {
            merged[name.lowercased(), default: []].append(Self.canonicalHeaderValue(value))
        }
        let names = merged.keys.sorted()
        let headerLines = names.map { "\($0):\(merged[$0, default: []].joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")
        let text = [method.uppercased(), path.isEmpty ? "/" : path, Self.canonicalQuery(query), headerLines,
                    signedHeaders, payloadHash].joined(separator: "\n")
        return (text, signedHeaders)
    }

    /// The string to sign (step 2) for a canonical request at a `YYYYMMDD'T'HHMMSS'Z'` timestamp.
    public func stringToSign(canonicalRequest: String, timestamp: String) throws(TransferError) -> String {
        let hash = Hex.string(try FileDigest.sha256(bytes: Array(canonicalRequest.utf8)))
        return [Self.algorithm, timestamp, credentialScope(day: String(timestamp.prefix(8))), hash].joined(separator: "\n")
    }

    /// The hex signature (steps 3 and 4) of a canonical request.
    public func signature(canonicalRequest: String, timestamp: String) throws(TransferError) -> String {
        let toSign = try stringToSign(canonicalRequest: canonicalRequest, timestamp: timestamp)
        var key = Array(("AWS4" + credentials.secretAccessKey).utf8)
        for part in [String(timestamp.prefix(8)), region, service, "aws4_request"] {
            key = try FileDigest.hmacSHA256(key: key, message: Array(part.utf8))
        }
        return Hex.string(try FileDigest.hmacSHA256(key: key, message: Array(toSign.utf8)))
    }

    /// `YYYYMMDD/region/service/aws4_request`.
    func credentialScope(day: String) -> String { "\(day)/\(region)/\(service)/aws4_request" }

    /// The sorted, encoded query string: `name=value` pairs joined with `&` (a bare name gets `=`).
    public static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        encodedPairs(query).map { (pair: (name: String, value: String)) -> String in
            pair.name + "=" + pair.value
        }.joined(separator: "&")
    }

    /// The query's names and values encoded, sorted by name, then value.
    static func encodedPairs(_ query: [(name: String, value: String)]) -> [(name: String, value: String)] {
        let encoded: [(name: String, value: String)] = query.map { (pair: (name: String, value: String)) -> (name: String, value: String) in
            (uriEncode(pair.name), uriEncode(pair.value))
        }
        return encoded.sorted { (a: (name: String, value: String), b: (name: String, value: String)) -> Bool in
            a.name == b.name ? a.value < b.value : a.name < b.name
        }
    }

    /// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters stay, every other byte
    /// becomes `%XX` (upper-case hex); `/` stays too when `keepSlash` (object key paths).
    public static func uriEncode(_ text: String, keepSlash: Bool = false) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            if isUnreserved(byte) || (keepSlash && byte == 0x2F) {
                out.append(byte)
            } else {
                out.append(0x25)  // %
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 15)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A-Z, a-z, 0-9, `-`, `_`, `.`, `~`.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x5F, 0x2E, 0x7E: return true
        default: return false
        }
    }

    /// `YYYYMMDD'T'HHMMSS'Z'` in UTC.
    public static func timestamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func pad(_ value: Int?, _ width: Int) -> String {
            let text = String(value ?? 0)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return pad(c.year, 4) + pad(c.month, 2) + pad(c.day, 2) + "T" + pad(c.hour, 2) + pad(c.minute, 2) + pad(c.second, 2) + "Z"
    }

    /// A header value trimmed, with runs of spaces collapsed to one.
    static func canonicalHeaderValue(_ value: String) -> String {
        var out = ""
        var lastWasSpace = false
        for character in value.trimmingCharacters(in: .whitespaces) {
            if character == " " || character == "\t" {
                if !lastWasSpace { out.append(" ") }
                lastWasSpace = true
            } else {
                out.append(character)
                lastWasSpace = false
            }
        }
        return out
    }
}
