import FaceAnalysis
import PhotoDecoding
import Testing

/// Inputs at the edges: nothing to search, nothing that fits, parameters out of range.
@Suite struct EdgeCaseTests {
    static let cascades = ["haarcascade_frontalface_default", "lbpcascade_frontalface"]

    @Test(arguments: cascades)
    func emptyImageHasNoFaces(cascade: String) throws {
        let detector = try Fixtures.cascade(cascade)
        #expect(try detector.detect(in: Image(grayWidth: 0, height: 0)).isEmpty)
        #expect(try detector.detect(in: Image(grayWidth: 0, height: 50)).isEmpty)
    }

    @Test(arguments: cascades)
    func imageSmallerThanTheWindowHasNoFaces(cascade: String) throws {
        let detector = try Fixtures.cascade(cascade)
        let size = detector.windowSize
        #expect(try detector.detect(in: Image(grayWidth: size.width - 1, height: 200, value: 90)).isEmpty)
        #expect(try detector.detect(in: Image(grayWidth: 200, height: size.height - 1, value: 90)).isEmpty)
        #expect(try detector.detect(in: Image(grayWidth: 1, height: 1)).isEmpty)
    }

    @Test(arguments: cascades)
    func windowSizedImageIsSearched(cascade: String) throws {
        // Exactly the window: one level, one position; must not read past the tables.
        let detector = try Fixtures.cascade(cascade)
        let size = detector.windowSize
        var image = Image(grayWidth: size.width, height: size.height)
        for i in image.pixels.indices { image.pixels[i] = UInt8(truncatingIfNeeded: i &* 37) }
        let found = try detector.detect(in: image, parameters: DetectionParameters(minNeighbors: 0))
        // The one position there is: any box is the whole image, found once.
        #expect(found.count <= 1)
        for box in found {
            #expect(box.x == 0 && box.y == 0 && box.width == size.width && box.height == size.height, "\(box)")
        }
    }

    @Test func hugeMinimumSizeFindsNothing() throws {
        let detector = try Fixtures.cascade("haarcascade_frontalface_default")
        let image = try Fixtures.image("hopper.png")
        #expect(try detector.detect(in: image, parameters: DetectionParameters(minSize: 100_000)).isEmpty)
        #expect(try detector.detect(in: image, parameters: DetectionParameters(minSize: Int.max / 2)).isEmpty)
    }

    @Test func maximumBelowTheWindowFindsNothing() throws {
        let detector = try Fixtures.cascade("haarcascade_frontalface_default")
        let image = try Fixtures.image("hopper.png")
        #expect(try detector.detect(in: image, parameters: DetectionParameters(maxSize: 10)).isEmpty)
    }

    @Test func flatImageHasNoFaces() throws {
        // Zero variance everywhere: every Haar window is refused before the first stage.
        let detector = try Fixtures.cascade("haarcascade_frontalface_default")
        #expect(try detector.detect(in: Image(grayWidth: 120, height: 90, value: 128)).isEmpty)
        #expect(try detector.detect(in: Image(grayWidth: 120, height: 90, value: 255)).isEmpty)
    }

    @Test(arguments: [1.0, 0.5, -2, .nan, .infinity])
    func badScaleFactorIsAnError(factor: Double) throws {
        let detector = try Fixtures.cascade("lbpcascade_frontalface")
        let image = Image(grayWidth: 40, height: 40)
        #expect { try detector.detect(in: image, parameters: DetectionParameters(scaleFactor: factor)) } throws: {
            ($0 as? FaceAnalysisError)?.code == .invalidParameter
        }
    }

    @Test func scaleFactorBarelyAboveOneIsAnError() throws {
        let detector = try Fixtures.cascade("lbpcascade_frontalface")
        let image = Image(grayWidth: 400, height: 400)
        #expect { try detector.detect(in: image, parameters: DetectionParameters(scaleFactor: 1 + 1e-9)) } throws: {
            ($0 as? FaceAnalysisError)?.code == .invalidParameter
        }
    }

    @Test(arguments: [(-1, 0, 0), (3, -5, 0), (3, 0, -5)])
    func negativeParametersAreErrors(neighbors: Int, minSize: Int, maxSize: Int) throws {
        let detector = try Fixtures.cascade("lbpcascade_frontalface")
        let parameters = DetectionParameters(minNeighbors: neighbors, minSize: minSize, maxSize: maxSize)
        #expect { try detector.detect(in: Image(grayWidth: 40, height: 40), parameters: parameters) } throws: {
            ($0 as? FaceAnalysisError)?.code == .invalidParameter
        }
    }

    @Test func colourImageIsSearchedAsGray() throws {
        let detector = try Fixtures.cascade("lbpcascade_frontalface")
        let gray = try Fixtures.image("hopper-small.png")
        var rgb = [UInt8]()
        for v in gray.pixels { rgb += [v, v, v] }
        let colour = Image(width: gray.width, height: gray.height, channels: 3, pixels: rgb)
        #expect(try detector.detect(in: colour) == detector.detect(in: gray))
    }

    @Test func boxesLieInsideTheImage() throws {
        let detector = try Fixtures.cascade("haarcascade_frontalface_default")
        let image = try Fixtures.image("noface-coins.png")
        let found = try detector.detect(in: image, parameters: DetectionParameters(minNeighbors: 0))
        #expect(!found.isEmpty)
        for box in found {
            #expect(box.x >= 0 && box.y >= 0 && box.x + box.width <= image.width && box.y + box.height <= image.height)
        }
    }
}
