import FaceAnalysis
import PhotoDecoding
import Testing

/// The detector against boxes recorded from OpenCV 4.6's CascadeClassifier on the same gray
/// pixels (Scripts/make-face-fixtures). The bar, so that PhotoDrain finds the faces OpenCV would:
/// at least 95% of OpenCV's boxes matched at IoU >= 0.8 and at most 5% extra boxes, per cascade,
/// over 20+ pictures with faces and some without; the detector is built to match exactly, so the per-picture differences are reported.
@Suite struct ParityTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var cascade: String
        var scaleFactor: Double
        var minNeighbors: Int
        var minSize: Int
        var maxSize: Int
        var testDescription: String { "\(cascade) scale \(scaleFactor) neighbours \(minNeighbors) min \(minSize) max \(maxSize)" }
    }

    static let cases: [Case] = {
        var seen: [Case] = []
        for run in Fixtures.parity?.results ?? [] where !seen.contains(where: {
            $0.cascade == run.cascade && $0.scaleFactor == run.scaleFactor && $0.minNeighbors == run.minNeighbors
                && $0.minSize == run.minSize && $0.maxSize == run.maxSize
        }) {
            seen.append(Case(cascade: run.cascade, scaleFactor: run.scaleFactor, minNeighbors: run.minNeighbors,
                             minSize: run.minSize, maxSize: run.maxSize))
        }
        return seen
    }()

    @Test func fixtureCoversTheRequiredCascadesAndPictures() throws {
        let fixture = try #require(Fixtures.parity, "Tests/FaceAnalysisTests/Fixtures/parity.json is missing or unreadable")
        #expect(fixture.faces.count >= 20)
        #expect(fixture.noFaces.count >= 3)
        let cascades = Set(fixture.results.map(\.cascade))
        #expect(cascades.isSuperset(of: ["haarcascade_frontalface_default", "haarcascade_frontalface_alt2", "lbpcascade_frontalface"]))
        // For every cascade and parameter set, at least 20 pictures with faces must give OpenCV
        // something to match.
        for c in Self.cases {
            let pictures = Set(fixture.results.filter {
                $0.cascade == c.cascade && $0.scaleFactor == c.scaleFactor && $0.minSize == c.minSize && !$0.boxes.isEmpty
            }.map(\.image))
            #expect(pictures.intersection(fixture.faces).count >= 20, "\(c.testDescription)")
        }
    }

    @Test(arguments: cases)
    func matchesOpenCV(_ c: Case) throws {
        let fixture = try #require(Fixtures.parity)
        let cascade = try Fixtures.cascade(c.cascade)
        let parameters = DetectionParameters(scaleFactor: c.scaleFactor, minNeighbors: c.minNeighbors,
                                             minSize: c.minSize, maxSize: c.maxSize)
        var expectedTotal = 0, matched = 0, extra = 0
        var differences: [String] = []
        for run in fixture.results where run.cascade == c.cascade && run.scaleFactor == c.scaleFactor
            && run.minNeighbors == c.minNeighbors && run.minSize == c.minSize && run.maxSize == c.maxSize {
            let image = try Fixtures.image(run.image)
            let found = try cascade.detect(in: image, parameters: parameters)
            let expected = run.boxes.map { Detection(x: $0[0], y: $0[1], width: $0[2], height: $0[3]) }
            var used = Set<Int>()
            for box in expected {
                let best = found.indices.filter { !used.contains($0) }
                    .max { found[$0].intersectionOverUnion(box) < found[$1].intersectionOverUnion(box) }
                if let best, found[best].intersectionOverUnion(box) >= 0.8 {
                    used.insert(best)
                    matched += 1
                }
            }
            expectedTotal += expected.count
            extra += found.count - used.count
            let foundBoxes = found.map { [$0.x, $0.y, $0.width, $0.height] }
            if Set(foundBoxes) != Set(run.boxes) {
                differences.append("\(run.image): OpenCV \(run.boxes) PhotoDrain \(foundBoxes)")
            }
        }
        #expect(expectedTotal > 0, "the fixture has no OpenCV boxes for \(c.testDescription)")
        let recall = expectedTotal == 0 ? 0 : Double(matched) / Double(expectedTotal)
        #expect(recall >= 0.95, "matched \(matched) of \(expectedTotal) OpenCV boxes; \(differences)")
        #expect(Double(extra) <= 0.05 * Double(expectedTotal), "\(extra) boxes OpenCV does not have; \(differences)")
        // Exact agreement is what the implementation aims at: report any picture that differs.
        #expect(differences.isEmpty, "pictures where the boxes are not identical: \(differences)")
    }
}

