import Foundation
import Testing

/// `drain`, `wake` + `agent` and `upload` send each photo's
/// provenance (library path, mtime, size, EXIF DateTimeOriginal) to a real `photodrain serve`,
/// which lists it; with `--layout path` the objects mirror the library.
@Suite(.serialized) struct ProvenanceCLITests {
    static let fixtures = CLI.repository.appendingPathComponent("Tests/PhotoDecodingTests/Fixtures")

    /// A library of a dated JPEG, a dated HEIC (both from Scripts/make-capture-date-fixtures) and
    /// an undated sample, in folders.
    static func library(_ ws: Workspace) throws -> [String: String?] {
        try ws.write("2021/March/dated.jpg", bytes: Array(try Data(contentsOf: fixtures.appendingPathComponent("capture-date.jpg"))))
        try ws.write("2021/March/dated.heic", bytes: Array(try Data(contentsOf: fixtures.appendingPathComponent("capture-date.heic"))))
        try ws.write("cat.jpg", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("chelsea.jpg")))))
        return ["2021/March/dated.jpg": "2021:03:04 05:06:07", "2021/March/dated.heic": "2021:03:04 05:06:07", "cat.jpg": nil]
    }

    /// Each object's provenance names one library file with that file's size, mtime and date.
    static func expectProvenance(_ objects: [[String: Any]], _ ws: Workspace, expected: [String: String?],
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(objects.count == expected.count, sourceLocation: sourceLocation)
        var seen: Set<String> = []
        for object in objects {
            let provenance = try #require(object["provenance"] as? [String: Any], "no provenance in \(object)", sourceLocation: sourceLocation)
            let path = try #require(provenance["path"] as? String, sourceLocation: sourceLocation)
            seen.insert(path)
            let attributes = try FileManager.default.attributesOfItem(atPath: ws.path(path))
            #expect((provenance["size"] as? Int) == (attributes[.size] as? NSNumber)?.intValue, sourceLocation: sourceLocation)
            #expect(provenance["pathEncoded"] as? String == path, sourceLocation: sourceLocation)
            var info = stat()
            #expect(stat(ws.path(path), &info) == 0, sourceLocation: sourceLocation)
            let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
            #expect((provenance["mtimeNanoseconds"] as? NSNumber)?.int64Value == mtime, sourceLocation: sourceLocation)
            #expect((provenance["mtime"] as? String)?.hasSuffix("Z") == true, sourceLocation: sourceLocation)
            #expect(provenance["dateTimeOriginal"] as? String == expected[path] ?? nil, "\(path)", sourceLocation: sourceLocation)
        }
        #expect(seen == Set(expected.keys), sourceLocation: sourceLocation)
    }

    @Test func drainSendsProvenanceAndServeLaysObjectsOutByPath() throws {
        let ws = try Workspace()
        let expected = try Self.library(ws)
        let received = ws.root.appendingPathComponent("received").path
        let server = try ServeProcess(directory: received, extra: ["--layout", "path"])
        let drain = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--json"] + DrainCLITests.fast)
        #expect(drain.status == 0, "stderr: \(drain.stderr)")
        let objects = try server.objects()
        try Self.expectProvenance(objects, ws, expected: expected)
        // The receiver's files/ mirrors the library, byte for byte.
        for path in expected.keys {
            let stored = try Data(contentsOf: URL(fileURLWithPath: received + "/files/" + path))
            #expect(stored == (try Data(contentsOf: URL(fileURLWithPath: ws.path(path)))), "\(path)")
        }
        #expect(objects.allSatisfy { ($0["storedPath"] as? String)?.hasPrefix("files/") == true })
    }

    @Test func wakeAndAgentSendTheSameProvenance() throws {
        let ws = try Workspace()
        let expected = try Self.library(ws)
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        var statuses: [Int32] = []
        for _ in 0..<10 {
            let wake = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", server.url] + DrainCLITests.fast)
            statuses.append(wake.status)
            let agent = try CLI.run(["agent", ws.library, "--store", ws.store, "--exit-when-idle", "0.5"])
            #expect(agent.status == 0, "agent stderr: \(agent.stderr)")
            if wake.status == 0 { break }
        }
        #expect(statuses.last == 0, "wake statuses: \(statuses)")
        let objects = try server.objects()
        try Self.expectProvenance(objects, ws, expected: expected)
        // The default layout is unchanged.
        #expect(objects.allSatisfy { $0["storedPath"] == nil })
    }

    @Test func uploadSendsTheNameOfAnAbsolutePathWithTheFilesDates() throws {
        let ws = try Workspace()
        let expected = try Self.library(ws)
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let heic = ws.path("2021/March/dated.heic")
        let result = try CLI.run(["upload", heic, "--to", server.url, "--json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let object = try #require(try server.objects().first)
        let provenance = try #require(object["provenance"] as? [String: Any])
        #expect(provenance["path"] as? String == "dated.heic")
        #expect(provenance["dateTimeOriginal"] as? String == expected["2021/March/dated.heic"] ?? nil)
        #expect(provenance["size"] as? Int == (try FileManager.default.attributesOfItem(atPath: heic)[.size] as? NSNumber)?.intValue)
    }
}
