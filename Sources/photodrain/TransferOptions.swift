import Foundation
import Transfer
import UploadProtocol

/// The options every command that uploads shares: `--to`, `--token-file`, `--interop-version`.
enum TransferOptions {
    static let to = OptionSpec.option("to", "URL", "The upload endpoint (a photodrain serve URL or any resumable-upload server).")
    static let tokenFile = OptionSpec.option("token-file", "PATH", "Read a bearer token from this file; it is never printed.")
    static let interopVersion = OptionSpec.option("interop-version", "N", "Resumable-upload interop version to speak (3-8).",
                                                  default: "\(ResumableUpload.defaultInteropVersion)")
    static let all = [to, tokenFile, interopVersion]

    /// Reads the token file: its first line, trimmed. Usage error when unreadable or malformed.
    static func token(_ arguments: ParsedArguments) throws(UsageError) -> BearerToken? {
        guard let path = arguments.string("token-file") else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read the token file \(path)", command: arguments.command)
        }
        guard let token = BearerToken(String(decoding: data, as: UTF8.self)) else {
            throw UsageError("the token file \(path) is empty or holds spaces or control characters", command: arguments.command)
        }
        return token
    }

    /// The upload configuration from `--to`, `--token-file` and `--interop-version`.
    static func configuration(_ arguments: ParsedArguments) throws(UsageError) -> UploadConfiguration {
        guard let endpoint = arguments.string("to") else {
            throw UsageError("--to URL is required (or \"to\" in the configuration file)", command: arguments.command)
        }
        let version = try arguments.int("interop-version", default: ResumableUpload.defaultInteropVersion, range: 3...8)
        let configuration = UploadConfiguration(endpoint: endpoint, interopVersion: version, token: try token(arguments))
        do {
            try configuration.validate()
        } catch {
            throw UsageError("--to: \(error.message)", command: arguments.command)
        }
        return configuration
    }
}
