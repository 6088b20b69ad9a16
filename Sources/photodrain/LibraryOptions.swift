import AssetStore
import Foundation

/// The options every command that reads a library's store shares: the folder and `--store`.
enum LibraryOptions {
    static let store = OptionSpec.option("store", "PATH", "The library's SQLite store.",
                                         default: "$XDG_STATE_HOME/photodrain/<folder>-<hash>.sqlite")

    /// Opens the store for the library folder `DIR` (the first positional, or the current folder);
    /// with `readOnly` (commands that only read it), without writing anything.
    static func open(_ arguments: ParsedArguments, readOnly: Bool = false) throws -> AssetStore {
        let folder = arguments.positionals.first ?? FileManager.default.currentDirectoryPath
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw UsageError("\(folder) is not a folder", command: arguments.command)
        }
        return try AssetStore(root: folder, path: arguments.string("store"), readOnly: readOnly)
    }
}

/// A timestamp for people and machines: ISO 8601 in UTC.
func isoTimestamp(_ seconds: Double?) -> String? {
    guard let seconds else { return nil }
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.string(from: Date(timeIntervalSince1970: seconds))
}
