import FaceAnalysis
import PhotoDecoding

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
default:
    print("usage")
}
