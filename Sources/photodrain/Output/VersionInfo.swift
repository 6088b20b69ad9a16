import Drain
import FaceAnalysis
import Foundation
import PhotoAnalysis

/// `photodrain --version`: the version, the commit the binary was built from, and the identifiers
/// of the models it finds (the ones its verdicts would name).
enum VersionInfo {
    /// The lines `--version` prints.
    static func lines() -> [String] {
        var lines = ["photodrain \(PhotoDrainCLI.version)", "commit     \(commit() ?? "unknown")"]
        let search = ModelSearch.current
        if let network = search.locate(AnalysisSettings.networkFile) {
            lines.append("detector   " + ((try? BlazeFace(contentsOf: network).identifier) ?? "unreadable: \(network)") + "  (\(network))")
        } else {
            lines.append("detector   not found: \(search.describeSearch(for: AnalysisSettings.networkFile))")
        }
        for file in [AnalysisSettings.verdictModelFile, AnalysisSettings.cascadeModelFile] {
            if let path = search.locate(file) {
                lines.append("model      " + ((try? LinearModel.load(path).identifier) ?? "unreadable: \(path)") + "  (\(path))")
            } else {
                lines.append("model      not found: \(search.describeSearch(for: file))")
            }
        }
        return lines
    }

    /// The commit: the `BUILD` file an install or package writes beside the models (one line,
    /// the commit hash), else the checkout's `.git` the binary was built in; nil when neither.
    static func commit() -> String? {
        let search = ModelSearch.current
        for directory in search.directories {
            let build = URL(fileURLWithPath: directory).deletingLastPathComponent().appendingPathComponent("BUILD").path
            if let text = try? String(contentsOfFile: build, encoding: .utf8) {
                let line = text.split(separator: "\n").first.map(String.init) ?? ""
                if !line.isEmpty { return line }
            }
        }
        // A build tree: the checkout holding the Models/ folder the search found.
        for directory in search.directories where directory.hasSuffix("/Models") {
            let git = URL(fileURLWithPath: directory).deletingLastPathComponent().appendingPathComponent(".git").path
            if let commit = gitHead(git) { return commit }
        }
        return nil
    }

    /// The commit `HEAD` names in the git folder `git` (a detached hash, a loose ref or a packed one).
    static func gitHead(_ git: String) -> String? {
        guard let head = try? String(contentsOfFile: git + "/HEAD", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) else {
            return nil
        }
        guard head.hasPrefix("ref: ") else { return head.count == 40 ? String(head.prefix(12)) : nil }
        let ref = String(head.dropFirst(5))
        if let loose = try? String(contentsOfFile: git + "/" + ref, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
           loose.count == 40 {
            return String(loose.prefix(12))
        }
        let packed = (try? String(contentsOfFile: git + "/packed-refs", encoding: .utf8)) ?? ""
        for line in packed.split(separator: "\n") where line.hasSuffix(" " + ref) {
            return String(line.prefix(12))
        }
        return nil
    }
}
