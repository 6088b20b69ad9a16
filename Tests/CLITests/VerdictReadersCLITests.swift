import AssetStore
import Foundation
import Testing

/// `verdicts`, `status` and `report` read a store's verdicts through the one `Verdict` type: a
/// store banked by an older PhotoDrain (a cascade verdict without `detector`, an undecodable
/// photo's, a companion file's link) reads as it always did.
@Suite struct VerdictReadersCLITests {
    static let cascade = #"{"analysisSize":{"height":384,"width":512},"cascade":"haarcascade_frontalface_default.xml","faces":[{"confirmed":true,"probability":0.9877,"region":{"detectorScore":3.25,"height":95,"neighbors":12,"width":95,"x":176,"y":66}},{"confirmed":false,"probability":0.125,"region":{"detectorScore":0.5,"height":40,"neighbors":3,"width":40,"x":10,"y":400}}],"label":"faces","milliseconds":41.235,"model":"face-confirm@0123abcd","score":0.9877,"version":1}"#
    static let corrupt = #"{"error":{"code":"corrupt","message":"Premature end of JPEG file"},"faces":[],"label":"error","milliseconds":2.5,"score":0,"version":1}"#

    /// A library whose photos carry verdicts as an older PhotoDrain banked them.
    static func oldStore() throws -> Workspace {
        let ws = try Workspace()
        try ws.write("2021/IMG_0001.JPG", bytes: Array("photo one".utf8))
        try ws.write("2021/IMG_0001.MOV", bytes: Array("its video".utf8))
        try ws.write("broken.jpg", bytes: Array("not a jpeg".utf8))
        let store = try AssetStore(root: ws.library, path: ws.store)
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 10) {
            let banked = asset.path == "broken.jpg"
                ? BankedVerdict(json: corrupt, label: "error", faceCount: 0, score: nil, analysisError: "corrupt")
                : BankedVerdict(json: cascade, label: "faces", faceCount: 1, score: 0.9877, sha256: String(repeating: "a", count: 64))
            #expect(try store.bankVerdict(banked, for: asset))
        }
        return ws
    }

    @Test func verdictsPrintsOldVerdictsAsTheyWereBanked() throws {
        let ws = try Self.oldStore()
        let run = try CLI.run(["verdicts", ws.library, "--store", ws.store])
        #expect(run.status == 0, "\(run.stderr)")
        var lines: [String: String] = [:]
        for line in run.lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            lines[try #require(object["path"] as? String)] = line
        }
        #expect(lines.count == 3)
        let photo = try #require(lines["2021/IMG_0001.JPG"])
        #expect(photo.contains(#","verdict":\#(Self.cascade)}"#), "\(photo)")
        #expect(photo.contains(#""faces":1,"#) && photo.contains(#""label":"faces","#) && photo.contains(#""score":0.9877,"#))
        let broken = try #require(lines["broken.jpg"])
        #expect(broken.contains(#","verdict":\#(Self.corrupt)}"#) && broken.contains(#""error":"corrupt""#), "\(broken)")
        let video = try #require(lines["2021/IMG_0001.MOV"])
        #expect(video.contains(#""verdict":{"companionOf":"2021/IMG_0001.JPG","label":"companion"}"#), "\(video)")

        let csv = try CLI.run(["verdicts", ws.library, "--store", ws.store, "--format", "csv"])
        #expect(csv.lines.contains { $0.hasPrefix("2021/IMG_0001.JPG,analyzed,faces,1,0.9877,") }, "\(csv.stdout)")

        // The analysis time in UTC, to the second, as ISO 8601 writes it (printed by hand, without
        // a formatter per row).
        let analysed = try #require(try AssetStore(root: ws.library, path: ws.store).asset(path: "broken.jpg")?.analyzedAt)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        let expected = formatter.string(from: Date(timeIntervalSince1970: analysed))
        #expect(broken.contains(#""analyzed_at":"\#(expected)""#), "\(broken) vs \(expected)")
    }

    @Test func statusNamesAnOldUndecodablePhotosError() throws {
        let ws = try Self.oldStore()
        let run = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let undecodable = try #require(report["undecodable"] as? [[String: Any]])
        #expect(undecodable.count == 1)
        #expect(undecodable.first?["code"] as? String == "corrupt")
        #expect(undecodable.first?["reason"] as? String == "Premature end of JPEG file")
    }
}
