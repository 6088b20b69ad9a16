import Foundation
import PhotoDecoding
import Testing

@Suite struct DetectCLITests {
    @Test func findsTheFacesOfAPortraitAndDrawsThem() throws {
        let ws = try Workspace()
        let out = ws.root.appendingPathComponent("boxes.png").path
        let result = try CLI.run(["detect", CLI.sample("hopper.jpg"), "--analysis-size", "200", "--json", "--annotate", out])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let faces = try #require(report["faces"] as? [[String: Any]])
        let confirmed = faces.filter { $0["confirmed"] as? Bool == true }
        #expect(confirmed.count == 1)
        // In the photo's own coordinates: the face sits in the upper middle of the 512x600 portrait.
        let x = try #require(confirmed.first?["x"] as? Int), y = try #require(confirmed.first?["y"] as? Int)
        #expect(x > 100 && x < 300 && y > 50 && y < 300)
        let picture = try PhotoDecoder.decode(out, options: DecodeOptions(output: .rgb))
        #expect(picture.width == 512 && picture.height == 600)
        // Some pixels are the confirmed-box green.
        var green = 0
        for i in stride(from: 0, to: picture.pixels.count, by: 3) where picture.pixels[i] == 40 && picture.pixels[i + 1] == 220 { green += 1 }
        #expect(green > 200)
    }

    @Test func noFacesInAPhotoWithout() throws {
        let result = try CLI.run(["detect", CLI.sample("rocket.jpg"), "--analysis-size", "160"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("rocket.jpg: 0 faces"))
    }

    @Test func badCascadeAndBadPhotoAreClearErrors() throws {
        let ws = try Workspace()
        try ws.write("bad.xml", bytes: Array("<opencv_storage><cascade>".utf8))
        let badCascade = try CLI.run(["detect", CLI.sample("hopper.jpg"), "--cascade", ws.path("bad.xml")])
        #expect(badCascade.status == 1)
        #expect(badCascade.stderr.contains("bad.xml"))
        try ws.write("empty.jpg", bytes: [])
        let badPhoto = try CLI.run(["detect", ws.path("empty.jpg"), "--analysis-size", "96"])
        #expect(badPhoto.status == 65)
        #expect(badPhoto.stdout.contains("error empty"))
        let tooHuge = try CLI.run(["detect", CLI.sample("rocket.jpg"), "--analysis-size", "96", "--min-size", "5000"])
        #expect(tooHuge.status == 0 && tooHuge.stdout.contains("0 faces"))
    }

    @Test func blazeFaceIsTheDefaultAndFindsEveryFaceOfAGroup() throws {
        let result = try CLI.run(["detect", CLI.sample("three-portraits.jpg"), "--json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let confirmed = try #require(report["faces"] as? [[String: Any]]).filter { $0["confirmed"] as? Bool == true }
        // Three portraits side by side: the astronaut, Grace Hopper and the man behind the camera.
        #expect(confirmed.count == 3)
        let xs = confirmed.compactMap { $0["x"] as? Int }.sorted()
        #expect(xs.count == 3 && xs[0] < 600 && xs[1] > 600 && xs[1] < 1250 && xs[2] > 1250)
        let cascade = try CLI.run(["detect", CLI.sample("three-portraits.jpg"), "--detector", "cascade"])
        #expect(cascade.status == 0 && cascade.stdout.contains("detector boxes"))
    }

    @Test(arguments: [
        ("missing", nil as [UInt8]?),
        ("empty", [UInt8]()),
        ("not a network", Array("{\"format\": \"photodrain-linear-model\"}".utf8)),
        ("truncated", nil),
        ("flipped byte", nil),
    ])
    func aBadWeightFileIsAOneLineErrorAndExit1(name: String, bytes: [UInt8]?) throws {
        let ws = try Workspace()
        let shipped = try [UInt8](Data(contentsOf: CLI.repository.appendingPathComponent("Models/blazeface-full-range.pdnn")))
        var content = bytes
        if name == "truncated" { content = Array(shipped.prefix(shipped.count / 2)) }
        if name == "flipped byte" {
            var damaged = shipped
            damaged[damaged.count - 100] ^= 0x40
            content = damaged
        }
        let path = ws.path("weights.pdnn")
        if let content { try ws.write("weights.pdnn", bytes: content) }
        let result = try CLI.run(["detect", CLI.sample("hopper.jpg"), "--weights", path])
        #expect(result.status == 1, "\(name): exit \(result.status)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(name): \(result.stderr)")
        #expect(result.stderr.contains("weights.pdnn"), "\(name): \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }
}
