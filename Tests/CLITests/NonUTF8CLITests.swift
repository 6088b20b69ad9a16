import Foundation
import Testing

/// A photo named with bytes that are not UTF-8 (Latin-1 "café.jpg",
/// in a Latin-1 folder) is analysed, uploaded, and its exact name bytes are on the receiver; `status`
/// shows it tracked and uploaded, nothing skipped.
@Suite(.serialized) struct NonUTF8CLITests {
    /// Writes `bytes` to the file at `path` (raw bytes), creating it.
    static func write(_ bytes: [UInt8], to path: [UInt8]) -> Bool {
        let fd = (path + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { creat($0.baseAddress!, 0o644) }
        }
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count
    }

    /// The bytes of the file at `path` (raw bytes), or nil.
    static func read(_ path: [UInt8]) -> [UInt8]? {
        let fd = (path + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_RDONLY) }
        }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out += chunk[0..<n]
        }
        return out
    }

    @Test(arguments: [["--layout", "path"], []])
    func aLatin1NameIsAnalysedUploadedAndKeptByteForByte(layout: [String]) throws {
        let ws = try Workspace()
        let photo = Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("chelsea.jpg"))))
        let folder: [UInt8] = Array("f".utf8) + [0xF6] + Array("to".utf8)          // "föto" in Latin-1
        let name: [UInt8] = Array("caf".utf8) + [0xE9] + Array(".jpg".utf8)        // "café.jpg" in Latin-1
        let library = Array(ws.library.utf8) + [0x2F]
        let folderMade = (library + folder + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { mkdir($0.baseAddress!, 0o755) }
        }
        #expect(folderMade == 0)
        let relative = folder + [0x2F] + name
        #expect(Self.write(photo, to: library + relative))

        let received = ws.root.appendingPathComponent("received").path
        let server = try ServeProcess(directory: received, extra: layout)
        let drain = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--json"] + DrainCLITests.fast)
        #expect(drain.status == 0, "stdout: \(drain.stdout) stderr: \(drain.stderr)")

        let objects = try server.objects()
        #expect(objects.count == 1)
        let object = try #require(objects.first)
        let provenance = try #require(object["provenance"] as? [String: Any])
        #expect(provenance["pathEncoded"] as? String == "f%F6to/caf%E9.jpg")
        #expect(object["filenameEncoded"] as? String == "caf%E9.jpg")
        #expect(provenance["size"] as? Int == photo.count)
        // The sidecar on disk holds the same exact bytes.
        let id = try #require(object["id"] as? String)
        let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: received + "/objects/\(id).json"))) as? [String: Any])
        #expect((sidecar["provenance"] as? [String: Any])?["pathEncoded"] as? String == "f%F6to/caf%E9.jpg")
        if layout.isEmpty {
            #expect(Self.read(Array((received + "/objects/" + id).utf8)) == photo)
        } else {
            #expect(sidecar["storedPath"] as? String == "files/f%F6to/caf%E9.jpg")
            #expect(Self.read(Array((received + "/files/").utf8) + relative) == photo)
        }
        // It was analysed (a verdict with a label), and status counts it as a tracked, uploaded row.
        let verdict = try #require(object["verdict"] as? String)
        #expect(verdict.contains("\"label\""))
        #expect(!verdict.contains("unanalysable"))
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        #expect(status.status == 0)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let counts = try #require(report["counts"] as? [String: Any])
        #expect(counts["total"] as? Int == 1)
        #expect(counts["uploaded"] as? Int == 1)
        #expect(counts["skipped"] as? Int == 0)
        #expect((report["skipped"] as? [Any])?.isEmpty == true)
    }
}
