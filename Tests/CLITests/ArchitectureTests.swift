import Foundation
import Testing

/// ARCHITECTURE.md's table of targets is the package's graph: every target of Package.swift (but
/// the tests) is a row, with exactly the imports it declares.
@Suite struct ArchitectureTests {
    @Test func theMapsTableMatchesThePackage() throws {
        let text = try String(contentsOf: CLI.repository.appendingPathComponent("ARCHITECTURE.md"), encoding: .utf8)
        let start = try #require(text.range(of: "<!-- targets:"))
        var documented: [String: Set<String>] = [:]
        for line in text[start.upperBound...].split(separator: "\n").dropFirst() {
            guard line.hasPrefix("|") else { if !documented.isEmpty { break } else { continue } }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 4, cells[1] != "target", !cells[1].hasPrefix("---") else { continue }
            documented[cells[1]] = Set(cells[3].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        }
        let swift = Process()
        let pipe = Pipe()
        swift.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // Its own scratch folder: the running `swift test` holds the lock on .build.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("architecture-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        swift.arguments = ["swift", "package", "--package-path", CLI.repository.path, "--scratch-path", scratch, "dump-package"]
        swift.standardOutput = pipe
        swift.standardError = FileHandle.nullDevice
        try swift.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        swift.waitUntilExit()
        #expect(swift.terminationStatus == 0)
        let package = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var declared: [String: Set<String>] = [:]
        for target in package["targets"] as? [[String: Any]] ?? [] where target["type"] as? String != "test" {
            let name = try #require(target["name"] as? String)
            var imports: Set<String> = []
            for dependency in target["dependencies"] as? [[String: Any]] ?? [] {
                for value in dependency.values {
                    if let first = (value as? [Any])?.first as? String { imports.insert(first) }
                }
            }
            declared[name] = imports
        }
        #expect(!declared.isEmpty)
        #expect(Set(documented.keys) == Set(declared.keys), "targets only in the map: \(Set(documented.keys).subtracting(declared.keys)), only in Package.swift: \(Set(declared.keys).subtracting(documented.keys))")
        for (name, imports) in declared {
            #expect(documented[name] == imports, "\(name): the map says \(documented[name] ?? []), Package.swift \(imports)")
        }
    }
}
