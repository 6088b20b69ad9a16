import Foundation
import Testing

/// What the benchmark scripts read from `photodrain` (once the FaceBench harness's): the network
/// timed alone, a cascade's detection timed alone, and the gray pixels both sides compare on.
@Suite struct BenchAloneCLITests {
    static let cascade = "/usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml"

    func temporaryFolder() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pd-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test(arguments: ["int8", "fp32"])
    func theNetworkAloneIsTimedAtEachPrecision(precision: String) throws {
        let result = try CLI.run(["bench", "--network-only", "--json", "--repeat", "2", "--input-size", "128", "--precision", precision])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(object["precision"] as? String == precision && object["inputSize"] as? Int == 128)
        #expect((object["model"] as? String)?.hasPrefix("blazeface-full-range@") == true)
        let median = try #require(object["medianMs"] as? Double), best = try #require(object["minMs"] as? Double)
        #expect(best > 0 && best <= median)
    }

    @Test func theNetworkAloneTakesNoPhotosAndNamesKernelsItKnows() throws {
        let photos = try CLI.run(["bench", "--network-only", CLI.sample("hopper.jpg")])
        #expect(photos.status == 64 && photos.stderr.contains("give no photos"))
        let kernels = try CLI.run(["bench", "--network-only", "--kernels", "neon"])
        #expect(kernels.status == 64 && kernels.stderr.contains("portable"))
    }

    @Test func theFaceDescriptorIsTimedPerFaceAndTakesNoPhotos() throws {
        let result = try CLI.run(["bench", "--embedding", "--json", "--repeat", "1"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect((object["model"] as? String)?.hasPrefix("dlib-face-resnet-v1@") == true)
        #expect(["portable", "avx2", "avx512"].contains(object["kernels"] as? String ?? ""))
        let median = try #require(object["medianMs"] as? Double), best = try #require(object["minMs"] as? Double)
        #expect(best > 0 && best <= median)
        let photos = try CLI.run(["bench", "--embedding", CLI.sample("hopper.jpg")])
        #expect(photos.status == 64 && photos.stderr.contains("give no photos"))
    }

    @Test func aCascadesDetectionIsTimedOnTheGrayPixelsInspectWrites() throws {
        let dir = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let gray = dir.appendingPathComponent("hopper.png").path
        let written = try CLI.run(["inspect", CLI.sample("hopper.jpg"), "--gray-png", gray])
        #expect(written.status == 0, "stderr: \(written.stderr)")
        let probe = try CLI.run(["inspect", "--json", gray])
        let header = try #require(try JSONSerialization.jsonObject(with: Data(probe.stdout.utf8)) as? [String: Any])
        #expect(header["format"] as? String == "png" && header["width"] as? Int == 512 && header["height"] as? Int == 600)

        let timed = try CLI.run(["bench", "--detect-only", "--json", "--cascade", Self.cascade, "--min-size", "30", "--repeat", "2", gray])
        #expect(timed.status == 0, "stderr: \(timed.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(timed.stdout.utf8)) as? [String: Any])
        #expect(object["file"] as? String == gray && object["faces"] as? Int == 1)
        #expect(object["cascade"] as? String == "haarcascade_frontalface_default")
        let detectOnly = try CLI.run(["bench", "--detect-only", gray])
        #expect(detectOnly.status == 64 && detectOnly.stderr.contains("--cascade"))
    }

    @Test func grayPNGWritesOnePhoto() throws {
        let result = try CLI.run(["inspect", CLI.sample("hopper.jpg"), CLI.sample("coffee.png"), "--gray-png", "/tmp/never.png"])
        #expect(result.status == 64 && result.stderr.contains("one FILE"))
    }
}
