import PhotoDecoding

/// Times the analysis core stage by stage on real photos, one image at a time on the calling
/// thread, so `photodrain bench` only has to print the result.
///
/// For every photo and repetition: probe the header, decode to gray with JPEG DCT scaling towards
/// the analysis size, resize to the analysis size, then detect; the detector reports how much of
/// its time went to the pyramid resizes and to the integral tables, and the rest is the window
/// scan plus grouping. Medians are taken per stage over all photos and repetitions.
public enum AnalysisBenchmark {
    /// What to run.
    public struct Configuration: Sendable {
        /// The short side photos are brought to before detection (the decoder's DCT scaling lands
        /// at or above it, then `Resize.toAnalysisSize`); nil analyses at full size.
        public var analysisShortSide: Int?
        /// Detector parameters.
        public var parameters: DetectionParameters
        /// How many times every photo is analysed; the first run also warms caches.
        public var repetitions: Int

        /// 480 px short side (a 640x480 analysis image for 4:3 photos), minimum face 30 px,
        /// OpenCV's other defaults, three repetitions.
        public init(analysisShortSide: Int? = 480, parameters: DetectionParameters = DetectionParameters(minSize: 30),
                    repetitions: Int = 3) {
            self.analysisShortSide = analysisShortSide
            self.parameters = parameters
            self.repetitions = repetitions
        }
    }

    /// Milliseconds per stage for one analysis of one photo.
    public struct StageTimes: Sendable, Equatable, Codable {
        /// Reading the header.
        public var probe: Double = 0
        /// Decoding to gray (DCT-scaled for JPEG).
        public var decode: Double = 0
        /// Resizing: to the analysis size, plus every pyramid level.
        public var resize: Double = 0
        /// Integral, square and tilted tables for every level.
        public var integral: Double = 0
        /// Scanning windows and grouping boxes.
        public var detect: Double = 0

        /// All stages together.
        public var total: Double { probe + decode + resize + integral + detect }

        /// The stages in pipeline order, named as `photodrain bench` prints them.
        public var stages: [(name: String, milliseconds: Double)] {
            [("probe", probe), ("decode", decode), ("resize", resize), ("integral", integral), ("detect", detect)]
        }

        /// Zero everywhere.
        public init() {}
    }

    /// A photo the benchmark could not analyse, and why.
    public struct Failure: Sendable, Equatable, Codable {
        /// The file.
        public var path: String
        /// The error's description (code and message).
        public var reason: String
    }

    /// The outcome of a run.
    public struct Result: Sendable, Codable {
        /// The cascade's identifier.
        public var cascade: String
        /// Photos analysed successfully.
        public var images: Int
        /// Analyses timed (images x repetitions).
        public var samples: Int
        /// Median milliseconds per stage.
        public var medians: StageTimes
        /// Median total milliseconds per photo.
        public var medianTotal: Double
        /// Photos per second at the median total time, one thread.
        public var imagesPerSecond: Double
        /// Faces found per photo (first repetition), in input order of the analysed photos.
        public var facesPerImage: [Int]
        /// Photos that failed to decode or analyse.
        public var failures: [Failure]
    }

    /// Analyses every file `configuration.repetitions` times with `cascade` and returns the
    /// per-stage medians. Files that fail are listed in `failures` and do not stop the run.
    public static func run(files: [String], cascade: CascadeClassifier,
                           configuration: Configuration = Configuration()) -> Result {
        var samples: [StageTimes] = []
        var faces: [Int] = []
        var failures: [Failure] = []
        let repetitions = max(1, configuration.repetitions)
        for path in files {
            do {
                for repetition in 0..<repetitions {
                    let (times, found) = try analyse(path, cascade: cascade, configuration: configuration)
                    samples.append(times)
                    if repetition == 0 { faces.append(found) }
                }
            } catch {
                failures.append(Failure(path: path, reason: "\(error)"))
            }
        }
        var medians = StageTimes()
        medians.probe = median(samples.map(\.probe))
        medians.decode = median(samples.map(\.decode))
        medians.resize = median(samples.map(\.resize))
        medians.integral = median(samples.map(\.integral))
        medians.detect = median(samples.map(\.detect))
        let total = median(samples.map(\.total))
        return Result(cascade: cascade.identifier, images: faces.count, samples: samples.count, medians: medians,
                      medianTotal: total, imagesPerSecond: total > 0 ? 1000 / total : 0,
                      facesPerImage: faces, failures: failures)
    }

    /// One timed analysis of one photo: the stage times and the number of faces.
    public static func analyse(_ path: String, cascade: CascadeClassifier,
                               configuration: Configuration) throws -> (times: StageTimes, faces: Int) {
        var times = StageTimes()
        let t0 = SystemCalls.monotonicNanoseconds()
        _ = try PhotoDecoder.probe(path)
        let t1 = SystemCalls.monotonicNanoseconds()
        let decoded = try PhotoDecoder.decode(path, options: DecodeOptions(output: .gray, targetShortSide: configuration.analysisShortSide))
        let t2 = SystemCalls.monotonicNanoseconds()
        let image = configuration.analysisShortSide.map { Resize.toAnalysisSize(decoded, shortSide: $0) } ?? decoded
        let t3 = SystemCalls.monotonicNanoseconds()
        var detection = DetectionTimings()
        let found = try cascade.detect(in: image, parameters: configuration.parameters, timings: &detection)
        times.probe = milliseconds(t1 - t0)
        times.decode = milliseconds(t2 - t1)
        times.resize = milliseconds(t3 - t2) + milliseconds(detection.resizeNanoseconds)
        times.integral = milliseconds(detection.integralNanoseconds)
        times.detect = milliseconds(detection.scanNanoseconds)
        return (times, found.count)
    }

    private static func milliseconds(_ nanoseconds: UInt64) -> Double {
        Double(nanoseconds) / 1_000_000
    }

    /// The middle value (mean of the two middle values for an even count); 0 when empty.
    public static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }
}
