import Foundation
import PhotoDecoding
import SystemSupport

/// One scenario's working folder: a photo library made from SampleImages, the store, and the
/// receiver's directory. Each photo is a sample with a unique trailer after its end marker (JPEG
/// and PNG decoders stop at EOI/IEND), so every photo has its own content and idempotency key.
final class Library {
    let root: String
    var folder: String { root + "/library" }
    var store: String { root + "/store.sqlite" }
    var received: String { root + "/received" }
    var logs: String { root + "/logs" }

    /// Current relative path -> SHA-256 of its content.
    private(set) var current: [String: String] = [:]
    /// Every SHA-256 ever written to any photo (old versions of modified files included).
    private(set) var everWritten: Set<String> = []
    private(set) var fileBytes: Int64 = 0

    init(root: String) throws {
        self.root = root
        for path in [folder, received, logs] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
    }

    /// Adds `count` photos cycling through `samples`, each with a trailer of `padding` seeded bytes.
    func addPhotos(_ count: Int, samples: [Sample], padding: Int = 64, prefix: String = "photo",
                   random: inout SeededRandom) throws {
        guard !samples.isEmpty else { throw MatrixError("no sample photos") }
        for index in 0..<count {
            let sample = samples[index % samples.count]
            let name = String(format: "%@-%03d.%@", prefix, index, sample.fileExtension)
            try write(name, bytes: sample.bytes + trailer(padding, tag: "\(prefix) \(index)", random: &random))
        }
    }

    /// Removes `relative` from the library.
    func remove(_ relative: String) throws {
        try FileManager.default.removeItem(atPath: folder + "/" + relative)
        current[relative] = nil
    }

    func write(_ relative: String, bytes: [UInt8]) throws {
        let path = folder + "/" + relative
        // Write beside, then rename: a reader sees the old file or the new one, never half of one.
        let staging = root + "/.staging"
        try Data(bytes).write(to: URL(fileURLWithPath: staging))
        if FileManager.default.fileExists(atPath: path) {
            fileBytes -= Int64((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
        }
        guard rename(staging, path) == 0 else { throw MatrixError("rename to \(path) failed") }
        guard let sha = (try? SHA256.digest(bytes)).map(SHA256.hex) else { throw MatrixError("sha256 failed") }
        current[relative] = sha
        everWritten.insert(sha)
        fileBytes += Int64(bytes.count)
    }

    /// Records the current content of `relative` (after a change made outside `write`).
    func rememberContent(of relative: String) throws {
        guard let sha = try? SHA256.hex(path: folder + "/" + relative) else { throw MatrixError("cannot hash \(relative)") }
        current[relative] = sha
        everWritten.insert(sha)
    }

    private func trailer(_ count: Int, tag: String, random: inout SeededRandom) -> [UInt8] {
        var bytes = Array("photodrain-reliability \(tag) ".utf8)
        while bytes.count < count {
            let word = random.next()
            for shift in stride(from: 0, to: 64, by: 8) where bytes.count < count { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return bytes
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }
}

/// A sample photo's bytes and extension.
struct Sample {
    let bytes: [UInt8]
    let fileExtension: String

    /// The JPEG and PNG files of SampleImages.
    static func load(from directory: String) throws -> [Sample] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        return names.compactMap { name -> Sample? in
            let ext = (name as NSString).pathExtension.lowercased()
            guard ext == "jpg" || ext == "png", let data = FileManager.default.contents(atPath: directory + "/" + name) else { return nil }
            return Sample(bytes: [UInt8](data), fileExtension: ext)
        }
    }
}

extension Library {
    /// Overwrites the last 64 bytes of `relative` in place (same inode, same size), as an editor
    /// saving over the file would: a reader that already opened it sees the new bytes from there on.
    func modifyInPlace(_ relative: String, random: inout SeededRandom) throws {
        let path = folder + "/" + relative
        guard let handle = FileHandle(forUpdatingAtPath: path) else { throw MatrixError("cannot open \(path)") }
        let size = try handle.seekToEnd()
        let start = size >= 64 ? size - 64 : 0
        var bytes = [UInt8](repeating: 0, count: Int(size - start))
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: random.next()) }
        try handle.seek(toOffset: start)
        try handle.write(contentsOf: Data(bytes))
        try handle.close()
        try rememberContent(of: relative)
    }
}

extension Sample {
    /// A large JPEG (`width` x `height`, RGB, a smooth gradient with seeded noise): the memory-capped
    /// scenario needs photos whose full-size decode would not fit under the cap.
    static func large(width: Int, height: Int, random: inout SeededRandom) throws -> Sample {
        let noise = (0..<256).map { _ in UInt8(truncatingIfNeeded: random.next() & 0x1F) }
        let image = Image(width: width, height: height, channels: 3) { out in
            var index = 0
            for y in 0..<height {
                for x in 0..<width {
                    let base = UInt8(truncatingIfNeeded: (x &* 255) / max(1, width - 1))
                    let n = noise[(x &+ y &* 7) & 255]
                    out[index] = base &+ n
                    out[index + 1] = UInt8(truncatingIfNeeded: (y &* 255) / max(1, height - 1))
                    out[index + 2] = n &* 4
                    index += 3
                }
            }
        }
        return Sample(bytes: try ImageEncoder.jpeg(image, quality: 80), fileExtension: "jpg")
    }
}
