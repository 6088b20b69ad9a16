import Foundation
import Testing
@testable import AssetStore
@testable import Drain
@testable import FaceAnalysis

/// An upload's verdict names its faces' people as the store has them when it is sent (issue 36
/// item 6); a photo without people sends its verdict as banked.
@Suite struct UploadPeopleTests {
    static func verdict() throws -> Verdict {
        let face = Verdict.Face(region: FaceRegion(x: 10, y: 12, width: 60, height: 64, detectorScore: 0.9), probability: 0.97, confirmed: true)
        return Verdict(faces: [face], model: "face-verdict@00000000", detector: "blazeface@00000000",
                       analysisSize: Verdict.Size(width: 640, height: 480), milliseconds: 12)
    }

    @Test(arguments: [true, false])
    func theVerdictTravelsWithItsPeople(clustered: Bool) async throws {
        let (library, store, _) = try BankedCaptureDateTests.library()
        defer { withExtendedLifetime(library) {} }
        let asset = try #require(try store.claimUnanalyzed(limit: 1).first)
        let json = try Self.verdict().json()
        var banked = BankedVerdict(json: json, label: "faces", faceCount: 1, score: 0.97, sha256: "ab")
        banked.faces = [BankedFace(index: 0, x: 10, y: 12, width: 60, height: 64, embedding: (0..<128).map { Float($0) / 1000 })]
        #expect(try store.bankVerdict(banked, for: asset))
        if clustered {
            try store.clusterFaces()
            try store.namePerson(1, "Anna")
        }
        let destination = RecordingDestination()
        guard case .finished(.succeeded) = try await BankedCaptureDateTests.upload(store, to: destination) else {
            Issue.record("the upload did not succeed")
            return
        }
        let sent = try #require(destination.sent.withLock { $0.first })
        if clustered {
            #expect(sent.verdictJSON.contains(#""people":[{"face":0,"name":"Anna","person":1}]"#), "\(sent.verdictJSON)")
            #expect(try Verdict.decode(json: sent.verdictJSON).people == [Verdict.PersonTag(face: 0, person: 1, name: "Anna")])
            #expect(sent.verdictSummaryJSON?.contains(#""people":[1]"#) == true, "\(sent.verdictSummaryJSON ?? "")")
            // Never banked: the store's verdict is the one analysis made.
            #expect(try store.asset(path: "dated.jpg")?.verdictJSON == json)
        } else {
            #expect(sent.verdictJSON == json)
            #expect(sent.verdictSummaryJSON?.contains("people") == false)
        }
    }
}
