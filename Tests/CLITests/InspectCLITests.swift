import Foundation
import Testing

@Suite struct InspectCLITests {
    @Test func inspectsEverySamplePhoto() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: CLI.repository.appendingPathComponent("SampleImages").path)
            .filter { $0.hasSuffix(".jpg") || $0.hasSuffix(".png") }.sorted()
        #expect(names.count >= 8)
        let result = try CLI.run(["inspect", "--json"] + names.map(CLI.sample))
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.lines.count == names.count)
        for line in result.lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["error"] == nil)
            #expect(object["decodedWidth"] as? Int ?? 0 > 0)
        }
    }

    @Test func reportsUprightSizeAndScale() throws {
        let result = try CLI.run(["inspect", "--json", "--analysis-size", "128", CLI.sample("hopper-orientation-6.jpg")])
        #expect(result.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(object["orientation"] as? Int == 6)
        #expect(object["scale"] as? String == "1/4")
        // Stored 600x512, scaled by 1/4 to 150x128, then turned upright.
        #expect(object["decodedWidth"] as? Int == 128 && object["decodedHeight"] as? Int == 150)
    }

    @Test(arguments: [("heif-chelsea.heic", "heif"), ("heif-chelsea.avif", "heif"), ("webp-chelsea.webp", "webp")])
    func inspectsHEIFAndWebPPhotos(file: String, format: String) throws {
        let path = CLI.repository.appendingPathComponent("Tests/PhotoDecodingTests/Fixtures/\(file)").path
        let result = try CLI.run(["inspect", "--json", "--analysis-size", "150", path])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(object["format"] as? String == format)
        #expect(object["width"] as? Int == 451 && object["height"] as? Int == 300)
        #expect(object["scale"] as? String == "1/2")
        #expect(object["decodedWidth"] as? Int == 226 && object["decodedHeight"] as? Int == 150)
    }

    @Test func saysWhenAHEICThumbnailServesTheDecode() throws {
        let path = CLI.repository.appendingPathComponent("Tests/PhotoDecodingTests/Fixtures/heif-astronaut.heic").path
        let json = try CLI.run(["inspect", "--json", "--analysis-size", "100", path])
        #expect(json.status == 0, "stderr: \(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["thumbnail"] as? String == "160x160" && object["scale"] as? String == "1/1")
        #expect(object["decodedWidth"] as? Int == 160)
        let text = try CLI.run(["inspect", "--analysis-size", "200", path])
        #expect(text.stdout.contains("heif 512x512 orientation 1") && text.stdout.contains("scale 1/2 -> 256x256"))
        #expect(!text.stdout.contains("thumbnail"))
    }

    @Test func badFilesGiveTheirErrorAndExit65() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pd-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let empty = dir.appendingPathComponent("empty.jpg").path
        let text = dir.appendingPathComponent("notes.png").path
        let truncated = dir.appendingPathComponent("cut.jpg").path
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        #expect(FileManager.default.createFile(atPath: text, contents: Data("not a photo".utf8)))
        let good = try Data(contentsOf: URL(fileURLWithPath: CLI.sample("hopper.jpg")))
        #expect(FileManager.default.createFile(atPath: truncated, contents: good.prefix(good.count / 2)))
        let result = try CLI.run(["inspect", CLI.sample("hopper.jpg"), empty, text, truncated, "/nonexistent/x.jpg", CLI.sample("camera.png")])
        #expect(result.status == 65)
        let lines = result.lines
        #expect(lines.count == 6)
        #expect(lines[0].contains("jpeg 512x600"))
        #expect(lines[1].contains("error empty"))
        #expect(lines[2].contains("error unsupported-format"))
        #expect(lines[3].contains("error corrupt"))
        #expect(lines[4].contains("error unreadable"))
        #expect(lines[5].contains("png 512x512"))
        #expect(result.stderr.contains("2 decoded, 4 failed"))
    }

    @Test(arguments: [
        ["inspect"],
        ["inspect", "--bogus", "x.jpg"],
        ["inspect", "--analysis-size", "ten", "x.jpg"],
        ["inspect", "--analysis-size"],
        ["no-such-command"],
    ])
    func usageErrorsExit64WithOneLineReason(arguments: [String]) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(!result.stderr.isEmpty && result.stderr.split(separator: "\n").count <= 2)
    }

    @Test func helpListsOptionsDefaultsAndExitCodes() throws {
        let result = try CLI.run(["help", "inspect"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("--analysis-size PIXELS"))
        #expect(result.stdout.contains("(default: 480)"))
        #expect(result.stdout.contains("EXIT STATUS:"))
        let overview = try CLI.run(["--help"])
        #expect(overview.status == 0 && overview.stdout.contains("inspect"))
    }
}
