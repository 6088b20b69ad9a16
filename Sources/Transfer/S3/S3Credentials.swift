import Foundation

/// An AWS access key pair (and session token) for signing S3 requests. Its descriptions are
/// redacted, so printing a configuration, an error or a log line never reveals the secret or
/// the session token.
public struct S3Credentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The access key id (`AKIA…`), sent in every `Authorization` header.
    public let accessKeyID: String
    /// The secret key; read only to derive signing keys.
    let secretAccessKey: String
    /// The session token of temporary credentials, sent as `x-amz-security-token`.
    let sessionToken: String?

    /// Wraps a key pair. Returns nil when either part is empty or holds spaces or control characters.
    public init?(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        func usable(_ text: String) -> Bool {
            !text.isEmpty && text.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
        }
        let token = sessionToken.flatMap { $0.isEmpty ? nil : $0 }
        guard usable(accessKeyID), usable(secretAccessKey), token.map(usable) ?? true else { return nil }
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = token
    }

    /// `S3Credentials(AKIA…, secret redacted)`: the first four characters of the key id only.
    public var description: String { "S3Credentials(\(accessKeyID.prefix(4))…, secret redacted)" }
    /// Same as `description`.
    public var debugDescription: String { description }

    /// The credentials from the environment: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
    /// `AWS_SESSION_TOKEN` when both keys are set; otherwise the shared credentials file
    /// (`AWS_SHARED_CREDENTIALS_FILE`, default `~/.aws/credentials`, with `home` as `~`), section
    /// `AWS_PROFILE` (default `default`). Throws `TransferError` (`invalid-request`) when neither
    /// has usable credentials; the message names where it looked, never a value.
    public static func resolve(environment: [String: String], home: String?) throws(TransferError) -> S3Credentials {
        if let id = environment["AWS_ACCESS_KEY_ID"], let secret = environment["AWS_SECRET_ACCESS_KEY"], !id.isEmpty {
            guard let credentials = S3Credentials(accessKeyID: id, secretAccessKey: secret,
                                                  sessionToken: environment["AWS_SESSION_TOKEN"]) else {
                throw TransferError(.invalidRequest, "AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY is empty or malformed")
            }
            return credentials
        }
        let profile = environment["AWS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 } ?? "default"
        let path = environment["AWS_SHARED_CREDENTIALS_FILE"].flatMap { $0.isEmpty ? nil : $0 }
            ?? home.map { $0 + "/.aws/credentials" }
        guard let path, let data = FileManager.default.contents(atPath: path) else {
            throw TransferError(.invalidRequest,
                                "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or write ~/.aws/credentials")
        }
        let section = profileSection(named: profile, in: String(decoding: data, as: UTF8.self))
        guard let id = section["aws_access_key_id"], let secret = section["aws_secret_access_key"],
              let credentials = S3Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: section["aws_session_token"]) else {
            throw TransferError(.invalidRequest, "the credentials file has no usable key pair for profile '\(profile)'")
        }
        return credentials
    }

    /// The `key = value` lines of one `[profile]` section of an INI-style credentials file.
    static func profileSection(named profile: String, in text: String) -> [String: String] {
        var values: [String: String] = [:]
        var inSection = false
        for raw in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                let name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                inSection = name == profile || name == "profile \(profile)"
                continue
            }
            guard inSection, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            values[key] = value
        }
        return values
    }
}
