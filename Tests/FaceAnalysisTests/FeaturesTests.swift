import Testing
import PhotoDecoding
@testable import FaceAnalysis

@Suite struct FeaturesTests {
    /// A deterministic textured gray image: a dark "eye band" over a gradient with noise, values
    /// kept within 40...200 so a brightness offset of ±40 never clips.
    static func texturedImage(width: Int = 80, height: Int = 60, offset: Int = 0) -> Image {
        var generator = SeededGenerator(seed: 42)
        var pixels = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                var value = 60 + (x * 90) / width + generator.index(below: 40)
                if (height / 3..<height / 2).contains(y) && (x % 30) < 12 { value -= 20 }
                pixels[y * width + x] = UInt8(value + offset)
            }
        }
        return Image(width: width, height: height, channels: 1, pixels: pixels)
    }

    static let region = FaceRegion(x: 10, y: 5, width: 48, height: 48)

    @Test(arguments: [Features.Spec.crop, Features.Spec.cropAndFrame])
    func vectorHasTheSpecsDimension(spec: Features.Spec) throws {
        let features = try Features(spec: spec)
        let vector = try features.extract(from: Self.texturedImage(), region: Self.region)
        #expect(vector.count == spec.dimension)
        #expect(vector.allSatisfy { $0.isFinite })
    }

    @Test func cropSpecHas171Features() {
        #expect(Features.Spec.crop.dimension == 171)
        #expect(Features.Spec.cropAndFrame.dimension == 177)
    }

    @Test func extractionIsDeterministic() throws {
        let features = try Features(spec: .cropAndFrame)
        let first = try features.extract(from: Self.texturedImage(), region: Self.region)
        let second = try features.extract(from: Self.texturedImage(), region: Self.region)
        #expect(first == second)
        let batch = try features.extract(from: Self.texturedImage(), regions: [Self.region, Self.region])
        #expect(batch == [first, first])
    }

    /// The promise in `Features`: gradients, layout and deviation ignore a brightness offset; the
    /// mean follows it.
    @Test(arguments: [-40, -7, 15, 40])
    func brightnessOffsetChangesOnlyTheMean(offset: Int) throws {
        let spec = Features.Spec.crop
        let features = try Features(spec: spec)
        let base = try features.extract(from: Self.texturedImage(), region: Self.region)
        let shifted = try features.extract(from: Self.texturedImage(offset: offset), region: Self.region)
        let histogram = spec.count(of: .gradientHistogram)
        let meanIndex = histogram, deviationIndex = histogram + 1
        for index in base.indices where index != meanIndex {
            #expect(abs(base[index] - shifted[index]) < 1e-4, "feature \(index)")
        }
        #expect(abs((shifted[meanIndex] - base[meanIndex]) * 255 - Float(offset)) < 1e-2)
        #expect(abs(shifted[deviationIndex] - base[deviationIndex]) < 1e-4)
    }

    @Test func gradientHistogramIsUnitLengthAndIgnoresContrast() throws {
        let spec = Features.Spec(cropSize: 32, cellSize: 8, orientationBins: 9, layoutGrid: 4,
                                 groups: [.gradientHistogram])
        let features = try Features(spec: spec)
        // Even pixels and their exact halves: every gradient halves, the histogram should not move.
        let textured = Self.texturedImage()
        let image = Image(width: textured.width, height: textured.height, channels: 1,
                          pixels: textured.pixels.map { $0 & 0xFE })
        let halved = Image(width: image.width, height: image.height, channels: 1, pixels: image.pixels.map { $0 / 2 })
        let base = try features.extract(from: image, region: Self.region)
        #expect(abs(Dot.product(base, base) - 1) < 1e-4)
        let same = try features.extract(from: halved, region: Self.region)
        #expect(zip(base, same).allSatisfy { abs($0 - $1) < 1e-3 })
    }

    @Test func flatCropHasNoGradients() throws {
        let features = try Features(spec: .crop)
        let vector = try features.extract(crop: Image(grayWidth: 25, height: 25, value: 128))
        let histogram = Features.Spec.crop.count(of: .gradientHistogram)
        // Resampling weights sum to 1 only to Float rounding, so "flat" means rounding noise.
        #expect(vector[..<histogram].allSatisfy { abs($0) < 1e-4 })
        #expect(abs(vector[histogram] - 128 / 255) < 1e-6)
        #expect(vector[histogram + 1] < 1e-6)
    }

    @Test func colourImagesUseTheirLuma() throws {
        let gray = Self.texturedImage()
        let rgb = Image(width: gray.width, height: gray.height, channels: 3,
                        pixels: gray.pixels.flatMap { [$0, $0, $0] })
        let features = try Features(spec: .cropAndFrame)
        #expect(try features.extract(from: rgb, region: Self.region)
            == features.extract(from: gray, region: Self.region))
    }

    @Test func geometryDescribesTheBoxInTheFrame() throws {
        let spec = Features.Spec(cropSize: 8, cellSize: 4, orientationBins: 2, layoutGrid: 2, groups: [.geometry])
        let vector = try Features(spec: spec).extract(from: Self.texturedImage(width: 80, height: 60),
                                                      region: FaceRegion(x: 20, y: 15, width: 40, height: 30))
        #expect(vector == [0.5, 0.5, 0.5, 0.5])
    }

    @Test func boxesCrossingTheBorderAreClamped() throws {
        let features = try Features(spec: .crop)
        let image = Self.texturedImage()
        let crossing = try features.extract(from: image, region: FaceRegion(x: -10, y: -10, width: 40, height: 40))
        let inside = try features.extract(from: image, region: FaceRegion(x: 0, y: 0, width: 30, height: 30))
        #expect(crossing == inside)
    }

    @Test(arguments: [
        FaceRegion(x: 0, y: 0, width: 0, height: 10),
        FaceRegion(x: 0, y: 0, width: 10, height: -1),
        FaceRegion(x: 80, y: 0, width: 10, height: 10),
        FaceRegion(x: -20, y: 10, width: 20, height: 10),
        FaceRegion(x: 10, y: 60, width: 10, height: 10),
    ])
    func emptyOrOutsideRegionsAreRejected(region: FaceRegion) throws {
        let features = try Features(spec: .crop)
        let error = #expect(throws: FaceAnalysisError.self) {
            try features.extract(from: Self.texturedImage(), region: region)
        }
        #expect(error?.code == .invalidRegion)
    }

    @Test(arguments: [
        Features.Spec(version: 2, cropSize: 32, cellSize: 8, orientationBins: 9, layoutGrid: 4, groups: [.intensity]),
        Features.Spec(cropSize: 30, cellSize: 8, orientationBins: 9, layoutGrid: 4, groups: [.intensity]),
        Features.Spec(cropSize: 32, cellSize: 8, orientationBins: 9, layoutGrid: 4, groups: []),
        Features.Spec(cropSize: 32, cellSize: 8, orientationBins: 9, layoutGrid: 4, groups: [.layout, .layout]),
    ])
    func uncomputableSpecsAreRejected(spec: Features.Spec) {
        let error = #expect(throws: FaceAnalysisError.self) { try Features(spec: spec) }
        #expect(error?.code == .featureSpecMismatch)
    }

    @Test func resamplingAnEvenBlockAveragesIt() {
        // 4x4 halves: left columns 10, right columns 30; shrinking to 2x2 keeps the two halves
        // apart (each output's tent reaches only its own half at its weights' centre).
        let pixels: [UInt8] = (0..<16).map { ($0 % 4) < 2 ? 10 : 30 }
        let image = Image(width: 4, height: 4, channels: 1, pixels: pixels)
        let output = Resampler.resample(image, x: 0, y: 0, width: 4, height: 4, to: 2)
        #expect(output[0] < output[1])
        #expect(abs((output[0] + output[1]) / 2 - 20) < 1e-4)
        #expect(output[0] == output[2] && output[1] == output[3])
    }
}

@Suite struct FeaturesSymmetryTests {
    private func symmetryFeatures(of image: Image) throws -> [Float] {
        let spec = Features.Spec.crop
        let vector = try Features(spec: spec).extract(crop: image)
        let start = spec.count(of: .gradientHistogram) + spec.count(of: .intensity) + spec.count(of: .layout)
        return Array(vector[start..<(start + spec.count(of: .symmetry))])
    }

    @Test func aMirrorSymmetricCropHasNoAsymmetry() throws {
        let half = FeaturesTests.texturedImage(width: 20, height: 40)
        let mirrored = Trainer.mirror(half)
        // Left half from `half`, right half its mirror image: symmetric about the centre line.
        var pixels: [UInt8] = []
        for y in 0..<40 {
            pixels += half.pixels[(y * 20)..<(y * 20 + 20)]
            pixels += mirrored.pixels[(y * 20)..<(y * 20 + 20)]
        }
        let symmetric = Image(width: 40, height: 40, channels: 1, pixels: pixels)
        let features = try symmetryFeatures(of: symmetric)
        #expect(features.count == 9)
        #expect(features.allSatisfy { abs($0) < 1e-4 }, "\(features)")
    }

    @Test func anAsymmetricCropShowsIt() throws {
        // A diagonal ramp: gradients at 45°, whose mirror image points at 135°. (A horizontal
        // ramp would not do: unsigned orientation makes it its own mirror image.)
        let ramp = Image(width: 40, height: 40, channels: 1, pixels: (0..<1600).map { (index: Int) -> UInt8 in
            let x = index % 40, y = index / 40
            return UInt8(40 + 2 * x + 2 * y)
        })
        let features = try symmetryFeatures(of: ramp)
        #expect(features[0] > 1)
        #expect(features.last ?? 0 > 0.1)
    }

    @Test func mirrorFlipsRowsAndIsItsOwnInverse() {
        let image = FeaturesTests.texturedImage(width: 7, height: 3)
        let flipped = Trainer.mirror(image)
        #expect(flipped[0, 1] == image[6, 1])
        #expect(flipped[6, 2] == image[0, 2])
        #expect(Trainer.mirror(flipped) == image)
    }
}
