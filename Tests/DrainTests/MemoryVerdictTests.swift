import AssetStore
import FaceAnalysis
import Foundation
import PhotoAnalysis
import PhotoDecoding
import Testing
@testable import Drain

/// A large photo for the memory tests, and the pipeline that analyses it: made once, shared.
struct LargePhoto: Sendable {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let shared = Result { try LargePhoto() }

    let folder: URL
    /// `folder/large.jpg`: the sample portraits and Grace Hopper, enlarged, on a 2400x1800 gray card
    /// (analysed at 1/2, 1200x900; a smaller decode would fit a tighter budget).
    let path: String
    let header: ImageHeader
    let pipeline: FacePipeline
    /// What its analysis needs, and the verdict it gets with no memory limit.
    let needs: Int
    let unlimited: BankedVerdict

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("pd-large-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        path = folder.appendingPathComponent("large.jpg").path
        let samples = Self.repository.appendingPathComponent("SampleImages")
        let portraits = try PhotoDecoder.decode(samples.appendingPathComponent("three-portraits.jpg").path, options: DecodeOptions(output: .rgb))
        let hopper = try PhotoDecoder.decode(samples.appendingPathComponent("hopper.jpg").path, options: DecodeOptions(output: .rgb))
        let card = Image(width: 2400, height: 1800, channels: 3) { out in
            for index in 0..<out.count { out[index] = 128 }
            Self.paste(portraits, times: 1, into: out, width: 2400, x: 100, y: 120)
            Self.paste(hopper, times: 2, into: out, width: 2400, x: 1000, y: 560)
        }
        try Data(try ImageEncoder.jpeg(card, quality: 90)).write(to: URL(fileURLWithPath: path))
        header = try PhotoDecoder.probe(path)
        let models = Self.repository.appendingPathComponent("Models")
        pipeline = try FacePipeline(settings: AnalysisSettings(modelPath: models.appendingPathComponent(AnalysisSettings.verdictModelFile).path,
                                                               networkPath: models.appendingPathComponent(AnalysisSettings.networkFile).path))
        needs = pipeline.memoryNeed(for: header)
        guard case .verdict(let verdict) = pipeline.analyze(path: path, memoryBudget: nil) else {
            throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "deferred with no memory limit"])
        }
        unlimited = BankedVerdict(verdict)
    }

    /// `image` enlarged `times` (nearest neighbour) with its top left at `x`, `y` of an RGB canvas.
    static func paste(_ image: Image, times: Int, into out: UnsafeMutableBufferPointer<UInt8>, width: Int, x: Int, y: Int) {
        for row in 0..<(image.height * times) {
            for column in 0..<(image.width * times) {
                let source = ((row / times) * image.width + column / times) * image.channels
                let target = ((y + row) * width + x + column) * 3
                for c in 0..<3 { out[target + c] = image.pixels[source + min(c, image.channels - 1)] }
            }
        }
    }

    /// A verdict's `analysisSize` as "WxH".
    static func analysisSize(_ verdict: BankedVerdict) throws -> String {
        let json = try #require(try JSONSerialization.jsonObject(with: Data(verdict.json.utf8)) as? [String: Any])
        let size = try #require(json["analysisSize"] as? [String: Any])
        return "\(size["width"] ?? "?")x\(size["height"] ?? "?")"
    }
}

/// A verdict must not depend on free memory. Under a tight budget a photo used to
/// be decoded at a smaller DCT scale (1/4 instead of 1/2), found fewer faces, and the lesser
/// verdict was banked as the photo's own. Now the photo is analysed at its one analysis scale or
/// deferred (its claim released, the run ends with work remaining); no budget changes its verdict.
@Suite struct MemoryVerdictTests {
    @Test func withNoLimitALargePhotoIsAnalysedAtHalfScale() throws {
        let photo = try LargePhoto.shared.get()
        #expect(try LargePhoto.analysisSize(photo.unlimited) == "1200x900")
        #expect(photo.unlimited.faceCount >= 3, "\(photo.unlimited.json)")
    }

    /// A budget that just holds the analysis gives the verdict of no limit at all.
    @Test func aTightButSufficientBudgetGivesTheUnlimitedVerdict() throws {
        let photo = try LargePhoto.shared.get()
        guard case .verdict(let analysed) = photo.pipeline.analyze(path: photo.path, memoryBudget: photo.needs) else {
            Issue.record("deferred with exactly the \(photo.needs) bytes it needs")
            return
        }
        let tight = BankedVerdict(analysed)
        #expect(try LargePhoto.analysisSize(tight) == LargePhoto.analysisSize(photo.unlimited))
        #expect(tight.faceCount == photo.unlimited.faceCount)
        #expect(tight.label == photo.unlimited.label && tight.score == photo.unlimited.score)
    }

    /// Any budget short of the need defers the photo; none banks a smaller analysis.
    @Test(arguments: [1, 1 << 20, 8 << 20])
    func aBudgetShortOfTheNeedDefers(shortBy: Int) throws {
        let photo = try LargePhoto.shared.get()
        for budget in [photo.needs - shortBy, photo.needs / 2, photo.needs / 4] {
            let result = photo.pipeline.analyze(path: photo.path, memoryBudget: budget)
            guard case .deferred(let reason, let needs) = result else {
                if case .verdict(let verdict) = result {
                    Issue.record("banked at \((try? LargePhoto.analysisSize(BankedVerdict(verdict))) ?? "?") within \(budget) of \(photo.needs) bytes")
                }
                continue
            }
            #expect(needs == photo.needs)
            #expect(reason.contains("2400x1800 needs about \(AnalysisCost.mebibytes(photo.needs)) MiB"), "\(reason)")
        }
    }

    /// The runner: with headroom for the photo but not for a slot's share of it, the photo waits for
    /// the other analyses and is analysed alone, at its scale. With less, it stays unanalysed, the
    /// run says memory ran out, and it reports what the photo needs.
    @Test(arguments: [2, 1])
    func theRunnerAnalysesAloneOrLeavesThePhotoUnanalysed(slots: Int) async throws {
        let photo = try LargePhoto.shared.get()
        let library = try Library(photos: 0)
        let folder = library.root.appendingPathComponent("photos")
        try FileManager.default.copyItem(atPath: photo.path, toPath: folder.appendingPathComponent("large.jpg").path)
        let samples = LargePhoto.repository.appendingPathComponent("SampleImages")
        for name in ["hopper.jpg", "chelsea.jpg"] {
            try FileManager.default.copyItem(at: samples.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        let store = try library.store()
        _ = try store.scan()
        // This process's resident set reads as 40 MiB; the headroom is the limit less that.
        func guardWith(headroom: Int) -> MemoryGuard {
            MemoryGuard(configuredLimit: (40 << 20) + headroom, reserve: 0, probe: FakeSystem().probe)
        }
        let options = AnalyzeOptions(slots: slots, pageSize: 10, expireAfter: .seconds(600))

        let short = AnalyzeRunner(store: store, analyzer: photo.pipeline, options: options, memory: guardWith(headroom: photo.needs - 1))
        let outcome = await short.run { _ in }
        #expect(outcome == .memoryExhausted)
        #expect(short.memoryDeferrals.count == 1 && short.memoryDeferrals.smallestNeed == photo.needs)
        #expect(try store.unanalyzedCount() == 1)
        #expect(try store.assets(in: .analyzed).map(\.path).sorted() == ["chelsea.jpg", "hopper.jpg"])

        let enough = AnalyzeRunner(store: store, analyzer: photo.pipeline, options: options, memory: guardWith(headroom: photo.needs))
        #expect(await enough.run { _ in } == .finished)
        #expect(enough.memoryDeferrals.count == 0)
        let banked = try #require(try store.asset(path: "large.jpg"))
        let verdict = BankedVerdict(json: try #require(banked.verdictJSON), label: banked.label ?? "", faceCount: banked.faceCount ?? 0, score: nil)
        #expect(try LargePhoto.analysisSize(verdict) == LargePhoto.analysisSize(photo.unlimited))
        #expect(banked.faceCount == photo.unlimited.faceCount)
    }
}
