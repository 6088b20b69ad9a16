import Foundation

/// Where the shipped models (BlazeFace's weights, the verdict and cascade classifiers) are found,
/// in order: the folder `$PHOTODRAIN_DATA_DIR` names (its `models/`, or itself), the installed
/// prefix of the running binary (`<prefix>/share/photodrain/models` for `<prefix>/bin/photodrain`),
/// a `models/` folder beside the binary, and the `Models/` folder of the checkout it was built in
/// (the binary's folder and up to five above it). The binary is found through `/proc/self/exe`,
/// so a copy run from `PATH` or through a link looks beside itself, not beside the current folder.
public struct ModelSearch: Sendable, Equatable {
    /// The folders looked in, in order.
    public let directories: [String]

    /// The search for this process: its environment and its executable.
    public static var current: ModelSearch {
        ModelSearch(environment: ProcessInfo.processInfo.environment, executable: executablePath())
    }

    /// The search for a binary at `executable` with `environment`.
    public init(environment: [String: String], executable: String) {
        var directories: [String] = []
        if let data = environment["PHOTODRAIN_DATA_DIR"], !data.isEmpty {
            directories += [data + "/models", data]
        }
        var dir = URL(fileURLWithPath: executable).resolvingSymlinksInPath().deletingLastPathComponent()
        directories.append(dir.appendingPathComponent("../share/photodrain/models").standardized.path)
        directories.append(dir.appendingPathComponent("models").path)
        for _ in 0..<6 {
            directories.append(dir.appendingPathComponent("Models").path)
            dir = dir.deletingLastPathComponent()
        }
        var seen: Set<String> = []
        self.directories = directories.filter { seen.insert($0).inserted }
    }

    /// The first `file` found in `directories`, or nil.
    public func locate(_ file: String) -> String? {
        for directory in directories {
            let candidate = directory + "/" + file
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue { return candidate }
        }
        return nil
    }

    /// Where `file` was looked for, for an error a user can act on.
    public func describeSearch(for file: String) -> String {
        "no \(file) in $PHOTODRAIN_DATA_DIR, the installed prefix or beside the binary (looked in "
            + directories.prefix(4).joined(separator: ", ") + (directories.count > 4 ? ", and the build's Models/" : "") + ")"
    }

    /// The running binary's path: `/proc/self/exe`, else `argv[0]`.
    public static func executablePath() -> String {
        if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return resolved }
        return CommandLine.arguments.first ?? ""
    }
}
