import FaceAnalysis
import PhotoDecoding
import Glibc
func cpuNow() -> Double { var t = timespec(); clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9 }

// Temporary harness, replaced below.
let args = Array(CommandLine.arguments.dropFirst())
switch args.first {
case "gray":
    let image = try PhotoDecoder.decode(args[1], options: DecodeOptions(output: .gray))
    try ImageEncoder.writePNG(image, to: args[2])
case "resize":
    let image = try PhotoDecoder.decode(args[1], options: DecodeOptions(output: .gray))
    let out = Resize.bilinear(image, width: Int(args[2])!, height: Int(args[3])!)
    try ImageEncoder.writePNG(out, to: args[4])
case "detect":
    let cascade = try CascadeClassifier(contentsOf: args[1])
    let nums = args[2...].filter { $0.allSatisfy { $0.isNumber || $0 == "." } }
    let p = DetectionParameters(scaleFactor: Double(nums[0])!, minNeighbors: Int(nums[1])!, minSize: Int(nums[2])!, maxSize: Int(nums[3])!)
    for path in args[2...] where !path.allSatisfy({ $0.isNumber || $0 == "." }) {
        let image = try PhotoDecoder.decode(path, options: DecodeOptions(output: .gray))
        let found = try cascade.detect(in: image, parameters: p)
        print(path, found.map { [$0.x, $0.y, $0.width, $0.height] }.sorted { $0.lexicographicallyPrecedes($1) })
    }
case "time":
    let cascade = try CascadeClassifier(contentsOf: args[1])
    let image = try PhotoDecoder.decode(args[2], options: DecodeOptions(output: .gray))
    let p = DetectionParameters(minSize: 30)
    var best = UInt64.max
    var t = DetectionTimings()
    let reps = Int(args.count > 3 ? args[3] : "20") ?? 20
    for _ in 0..<reps {
        let c = cpuNow()
        _ = try cascade.detect(in: image, parameters: p, timings: &t)
        best = min(best, UInt64((cpuNow() - c) * 1e9))
    }
    print(args[1], Double(best) / 1e6, "ms best; totals resize", t.resizeNanoseconds / 20_000, "us integral", t.integralNanoseconds / 20_000, "us scan", t.scanNanoseconds / 20_000, "us")
default:
    print("usage")
}
