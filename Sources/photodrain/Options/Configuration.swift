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
        // A misspelt key would otherwise be ignored without a word, and its setting silently lost.
        if let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
            for key in object.keys.sorted() where !knownKeys.contains(key) {
                let hint = closestKey(to: key).map { "; did you mean \"\($0)\"?" }
                    ?? "; the keys are " + knownKeys.joined(separator: ", ")
                throw UsageError("configuration file \(path): unknown key \"\(key)\"\(hint)")
            }
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

    /// The keys the file may hold.
    static let knownKeys = ["to", "tokenFile", "caFile", "slots", "memoryLimit", "inflightLimit", "analysisSize",
                            "interopVersion", "store"]

    /// The known key closest to `key` (ignoring case, `-` and `_`), when it is close enough to be
    /// the one meant: at most a third of its letters differ.
    static func closestKey(to key: String) -> String? {
        func folded(_ text: String) -> [Character] { Array(text.lowercased().filter { $0 != "-" && $0 != "_" }) }
        let wanted = folded(key)
        let scored = knownKeys.map { ($0, editDistance(wanted, folded($0))) }.min { $0.1 < $1.1 }
        guard let (best, distance) = scored, distance <= max(1, wanted.count / 3) else { return nil }
        return best
    }

    /// Levenshtein distance between two strings of characters.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
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
