import FaceAnalysis
import Foundation
import PhotoDecoding

/// `photodrain train --calibrate --out RANGES.json PHOTO...`: the int8 network's calibration.
extension TrainCommand {
    /// Measures the Float network's activation ranges over real photos, as analysis runs it
    /// (faces down to a 40th of the short side, 8 to 40 pixels, at most 1600 pixels on the short
    /// side), and writes them for the int8 plan (`NetworkCalibration`, beside the weights).
    static func calibrate(_ arguments: ParsedArguments) throws -> ExitCode {
        guard let out = arguments.string("out") else { throw UsageError("--calibrate needs --out RANGES.json", command: spec.name) }
        let photos = try BenchCommand.photoFiles(arguments.positionals)
        guard !photos.isEmpty else { throw UsageError("--calibrate needs photos (files or folders) to measure on", command: spec.name) }
        let detector = try BlazeFace(contentsOf: try AnalysisOptions.weightsPath(arguments), precision: .fp32)
        var ranges: [Int: (Float, Float)] = [:]
        var names: [String] = []
        let bar = ProgressBar(title: "calibrating", total: photos.count)
        for path in photos {
            let header = try PhotoDecoder.probe(path)
            let short = min(header.uprightSize.width, header.uprightSize.height)
            let image = try PhotoDecoder.decode(path, options: DecodeOptions(output: .rgb, targetShortSide: min(short, 1600)))
            let minFace = max(8, min(40, min(image.width, image.height) / 40))
            try detector.calibrate(on: [(image, minFace)], ranges: &ranges)
            names.append(URL(fileURLWithPath: path).lastPathComponent)
            bar.advance()
        }
        bar.finish()
        let calibration = NetworkCalibration(network: detector.identifier,
                                             calibratedOn: "\(names.count) photos: " + names.joined(separator: ", "), ranges: ranges)
        try calibration.write(to: out)
        Console.shared.out("calibration \(detector.identifier) -> \(out): \(ranges.count) inputs measured on \(names.count) photos")
        return .success
    }
}
