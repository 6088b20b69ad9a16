import Foundation

/// The optional configuration file: defaults for the shared flags, overridden by flags.
///
/// It is JSON, read from `--config PATH`, else `$PHOTODRAIN_CONFIG`, else
/// `$XDG_CONFIG_HOME/photodrain/config.json` (or `~/.config/photodrain/config.json`) when present:
///
///     { "to": "https://photos.example/uploads", "tokenFile": "~/.config/photodrain/token",
///       "caFile": "~/.config/photodrain/home-ca.pem", "slots": 3, "memoryLimit": "512M",
///       "inflightLimit": 40, "analysisSize": 480, "interopVersion": 6,
///       "store": "/var/lib/photodrain/library.sqlite" }
struct Configuration: Decodable, Equatable {
    var to: String?
    var tokenFile: String?
    var caFile: String?
    var slots: Int?
    var memoryLimit: String?
    var inflightLimit: Int?
    var analysisSize: Int?
    var interopVersion: Int?
    var store: String?

    /// Flag name for each key, as the commands spell them.
    var asFlagValues: [String: String] {
        var values: [String: String] = [:]
        values["to"] = to
        values["token-file"] = tokenFile.map(Configuration.expandTilde)
        values["ca-file"] = caFile.map(Configuration.expandTilde)
        values["slots"] = slots.map(String.init)
        values["memory-limit"] = memoryLimit
        values["inflight-limit"] = inflightLimit.map(String.init)
        values["analysis-size"] = analysisSize.map(String.init)
        values["interop-version"] = interopVersion.map(String.init)
        values["store"] = store.map(Configuration.expandTilde)
        return values
    }

    static func expandTilde(_ path: String) -> String {
        guard path.hasPrefix("~/"), let home = ProcessInfo.processInfo.environment["HOME"] else { return path }
        return home + path.dropFirst(1)
    }

    /// The file to read: an explicit path (which must exist), else the environment's, else the
    /// default location if a file is there.
    static func locate(explicit: String?) -> (path: String, required: Bool)? {
        let env = ProcessInfo.processInfo.environment
        if let explicit { return (expandTilde(explicit), true) }
        if let path = env["PHOTODRAIN_CONFIG"], !path.isEmpty { return (expandTilde(path), true) }
        let base = env["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (env["HOME"].map { $0 + "/.config" } ?? "")
        let path = base + "/photodrain/config.json"
        return FileManager.default.fileExists(atPath: path) ? (path, false) : nil
    }

    /// Reads and decodes the file; a usage error names what is wrong with it.
    static func load(explicit: String?) throws(UsageError) -> Configuration? {
        guard let (path, _) = locate(explicit: explicit) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read the configuration file \(path)")
        }
        do {
            return try JSONDecoder().decode(Configuration.self, from: data)
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let key = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw UsageError("configuration file \(path): '\(key)' has the wrong type")
        } catch {
            throw UsageError("configuration file \(path) is not valid JSON")
        }
    }

    /// Fills options the command accepts and the user did not give.
    func apply(to arguments: inout ParsedArguments, spec: CommandSpec) {
        for (name, value) in asFlagValues where arguments.values[name] == nil {
            if spec.options.contains(where: { $0.name == name && $0.value != nil }) {
                arguments.values[name] = value
            }
        }
    }
}
