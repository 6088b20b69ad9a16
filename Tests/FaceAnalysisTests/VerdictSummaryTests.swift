import Foundation
import Testing
@testable import FaceAnalysis

/// The forms derived from a verdict (the store's columns, the S3 summary, a companion's verdict)
/// and verdicts as older versions stored them: every reader goes through `Verdict`, so stores and
/// receivers that hold the old bytes must still read, and be sent, the same bytes.
@Suite struct VerdictSummaryTests {
    /// A group photo: 24 confirmed BlazeFace boxes, far more than S3's 2 KB of metadata hold.
    static let group: Verdict = {
        let region = FaceRegion(x: 10, y: 20, width: 30, height: 40, neighbors: 5, detectorScore: 0.8,
                                keypoints: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], levels: 2)
        return Verdict(faces: Array(repeating: Verdict.Face(region: region, probability: 0.9, confirmed: true), count: 24),
                       model: "face-verdict@d4a8a7fc", detector: "blazeface-full-range@e5b08c53",
                       analysisSize: Verdict.Size(width: 600, height: 400), milliseconds: 12)
    }()

    /// The summary is the one receivers were sent before it was made from the type (then from
    /// the JSON by its keys): the same bytes.
    @Test func theSummaryIsTheOneReceiversHaveBeenSent() throws {
        #expect(try Self.group.json().utf8.count > 2048)
        #expect(try Self.group.summaryJSON() == #"{"boxes":24,"detector":"blazeface-full-range@e5b08c53","faces":24,"label":"faces","model":"face-verdict@d4a8a7fc","score":0.9,"summary":true,"version":1}"#)
        let failed = Verdict(failure: Verdict.Failure(code: "corrupt", message: "Premature end of JPEG file"), milliseconds: 2.5)
        #expect(try failed.summaryJSON() == #"{"boxes":0,"error":{"code":"corrupt","message":"Premature end of JPEG file"},"faces":0,"label":"error","score":0,"summary":true,"version":1}"#)
        #expect(try VerdictTests.fixed.summaryJSON() == #"{"boxes":2,"cascade":"haarcascade_frontalface_default.xml","detector":"haarcascade_frontalface_default.xml","faces":1,"label":"faces","model":"face-confirm@0123abcd","score":0.9877,"summary":true,"version":1}"#)
    }

    @Test func theStoresColumnsComeFromTheVerdict() {
        #expect(VerdictTests.fixed.confirmedFaces == 1 && VerdictTests.fixed.rejectedBoxes == 1)
        #expect(VerdictTests.fixed.indexedScore == 0.9877)
        let failed = Verdict(failure: Verdict.Failure(code: "corrupt", message: "bad"), milliseconds: 1, unanalysable: false)
        #expect(failed.indexedScore == nil && failed.confirmedFaces == 0)
    }

    /// Verdicts as stores banked them: a cascade verdict from before other detectors existed (no
    /// `detector`), a BlazeFace verdict, an undecodable photo's, a file that is not a photo.
    @Test(arguments: [
        (#"{"analysisSize":{"height":384,"width":512},"cascade":"haarcascade_frontalface_default.xml","faces":[{"confirmed":true,"probability":0.9877,"region":{"detectorScore":3.25,"height":95,"neighbors":12,"width":95,"x":176,"y":66}}],"label":"faces","milliseconds":41.235,"model":"face-confirm@0123abcd","score":0.9877,"version":1}"#,
         Verdict.Label.faces, 1, 0.9877 as Double?),
        (#"{"analysisSize":{"height":400,"width":600},"detector":"blazeface-full-range@e5b08c53","faces":[{"confirmed":false,"probability":0.31,"region":{"detectorScore":0.9123,"height":40,"keypoints":[1,2,3,4,5,6,7,8,9,10,11,12],"levels":2,"neighbors":5,"secondLooks":[0.5,0.25],"width":30,"x":10,"y":20}}],"label":"no-faces","milliseconds":12,"model":"face-verdict@00000001","score":0.31,"version":1}"#,
         .noFaces, 0, 0.31),
        (#"{"error":{"code":"corrupt","message":"Premature end of JPEG file"},"faces":[],"label":"error","milliseconds":2.5,"score":0,"version":1}"#,
         .error, 0, nil),
        (#"{"error":{"code":"unsupported-format","message":"a QuickTime movie, not a photo"},"faces":[],"label":"unanalysable","milliseconds":0.25,"score":0,"version":1}"#,
         .unanalysable, 0, nil),
    ])
    func oldVerdictsDecodeAndKeepTheirBytes(json: String, label: Verdict.Label, faces: Int, score: Double?) throws {
        let verdict = try Verdict.decode(json: json)
        #expect(verdict.label == label && verdict.confirmedFaces == faces && verdict.indexedScore == score)
        #expect(verdict.companionOf == nil)
        #expect(try verdict.json() == json)
    }

    /// A companion file travels with its photo's verdict and the photo's path, the keys sorted
    /// into it as they were when the two were merged as dictionaries.
    @Test func aCompanionsVerdictIsItsPhotosWithTheLink() throws {
        var verdict = VerdictTests.fixed
        verdict.companionOf = "2021/IMG_0001.HEIC"
        let photo = try VerdictTests.fixed.json()
        let expected = photo.replacingOccurrences(of: #","detector":"#, with: #","companionOf":"2021/IMG_0001.HEIC","detector":"#)
        #expect(try verdict.json() == expected)
        #expect(try Verdict.decode(json: expected).companionOf == "2021/IMG_0001.HEIC")
        #expect(try verdict.summaryJSON() == VerdictTests.fixed.summaryJSON())
    }
}
