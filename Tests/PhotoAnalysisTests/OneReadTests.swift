import FaceAnalysis
import Foundation
import PhotoDecoding
import SystemSupport
import Synchronization
import Testing
@testable import PhotoAnalysis

/// A photo is read once for its analysis (`PhotoBytes.read`): its header, pixels, digest and
/// capture date come from one version of the file.
@Suite struct OneReadTests {
    static let formats = ["capture-date.jpg", "capture-date.png", "capture-date.webp", "capture-date.heic",
                          "orientation-6.jpg", "heif-hopper-exif6.heic", "png-gray-1-interlaced.png"]

    /// From memory, every format decodes to the same pixels, the same header and the same date as
    /// from the file.
    @Test(arguments: formats)
    func theBytesGiveWhatTheFileGives(_ name: String) throws {
        let path = AnalysedPhotoTests.fixture(name)
        let photo = try PhotoBytes.read(path)
        #expect(photo.count == (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int))
        #expect(try PhotoDecoder.probe(photo) == PhotoDecoder.probe(path))
        let options = DecodeOptions(output: .rgb, targetShortSide: 64)
        let fromFile = try PhotoDecoder.decode(path, options: options)
        let fromBytes = try PhotoDecoder.decode(photo, options: options)
        #expect(fromBytes.width == fromFile.width && fromBytes.height == fromFile.height)
        #expect(fromBytes.pixels == fromFile.pixels)
        #expect(CaptureDate.dateTimeOriginal(photo) == CaptureDate.dateTimeOriginal(path: path))
    }

    @Test func anEmptyFileAndAFolderAreRefusedAsBefore() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pd-oneread-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let empty = folder.appendingPathComponent("empty.jpg").path
        FileManager.default.createFile(atPath: empty, contents: Data())
        #expect(throws: DecodeError.self) { try PhotoBytes.read(empty) }
        do { _ = try PhotoBytes.read(empty) } catch { #expect(error.code == .empty) }
        do { _ = try PhotoBytes.read(folder.path) } catch { #expect(error.code == .unreadable && error.message == "not a regular file") }
    }

    /// A photo rewritten in place, again and again, while it is analysed: every verdict's digest
    /// is that of the version whose size it reports (two versions of different sizes), never one
    /// version's size with the other's digest. Before the single read, the header, pixels and
    /// digest came from three opens and could mix.
    @Test func aPhotoRewrittenDuringItsAnalysisNeverMixesVersions() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pd-oneread-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let small = try Data(contentsOf: URL(fileURLWithPath: AnalysedPhotoTests.fixture("orientation-1.png")))
        let large = try Data(contentsOf: URL(fileURLWithPath: AnalysedPhotoTests.fixture("capture-date.png")))
        let versions = [small, large].map { data in
            (sha: data.withUnsafeBytes { SHA256.hex(try! SHA256.digest($0)) },
             size: try! PhotoDecoder.probe(PhotoBytes(copying: [UInt8](data))).uprightSize)
        }
        #expect(versions[0].size != versions[1].size)
        let path = folder.appendingPathComponent("photo.png").path
        try small.write(to: URL(fileURLWithPath: path))
        let pipeline = try AnalysedPhotoTests.pipeline()
        let stop = Mutex(false)
        let writer = Thread {
            var turn = 0
            while !stop.withLock({ $0 }) {
                turn += 1
                // In place, as an editor that keeps the inode writes: truncate, then the bytes.
                if let handle = FileHandle(forWritingAtPath: path) {
                    let data = turn % 2 == 0 ? small : large
                    try? handle.truncate(atOffset: 0)
                    try? handle.write(contentsOf: data.prefix(data.count / 2))
                    try? handle.write(contentsOf: data.suffix(from: data.count / 2))
                    try? handle.close()
                }
                // A moment with a whole version in place, so some analyses see one.
                Thread.sleep(forTimeInterval: 0.0005)
            }
        }
        writer.start()
        defer { stop.withLock { $0 = true } }
        var checked = 0
        for _ in 0..<300 {
            guard case .verdict(let analysed) = pipeline.analyze(path: path, memoryBudget: nil) else { continue }
            guard analysed.verdict.error == nil, let sha = analysed.sha256, let size = analysed.uprightSize else { continue }
            let version = versions.first { $0.sha == sha }
            #expect(version != nil, "a digest of neither version: a torn read was kept")
            if let version {
                #expect(Verdict.Size(width: version.size.width, height: version.size.height) == size,
                        "the size of one version with the digest of the other")
                checked += 1
            }
        }
        stop.withLock { $0 = true }
        while writer.isExecuting { Thread.sleep(forTimeInterval: 0.01) }
        // Some analyses must have been of a whole version, or the test proved nothing.
        #expect(checked > 0)
    }
}
