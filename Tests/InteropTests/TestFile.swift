import Foundation
import Transfer

/// A file of deterministic pseudo-random bytes in its own temporary directory, removed when the
/// value goes away. Every 8-byte word differs, so a misplaced or repeated piece changes the bytes.
final class TestFile {
    /// Why a file could not be made or read.
    struct FileError: Error, CustomStringConvertible {
        let description: String
    }

    let path: String
    let size: Int
    private let directory: String

    /// Writes `size` bytes made from `seed`, one mebibyte at a time.
    init(size: Int, seed: UInt64, name: String = "IMG_0001.jpg") throws {
        directory = FileManager.default.temporaryDirectory.path + "/photodrain-interop-file-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = directory + "/" + name
        self.size = size
        guard FileManager.default.createFile(atPath: path, contents: nil),
              let handle = FileHandle(forWritingAtPath: path) else {
            throw FileError(description: "cannot create \(path)")
        }
        defer { try? handle.close() }
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var words = [UInt64](repeating: 0, count: 1 << 17)
        var left = size
        while left > 0 {
            for i in words.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                words[i] = state
            }
            let count = min(left, words.count * 8)
            try words.withUnsafeBytes { try handle.write(contentsOf: Data($0.prefix(count))) }
            left -= count
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// The metadata the client sends: name, content SHA-256 and a small verdict.
    func metadata(filename: String? = nil) throws -> UploadMetadata {
        var metadata = try UploadMetadata(file: path, verdictJSON: #"{"faces":2,"label":"keep","score":0.91}"#)
        if let filename { metadata.filename = filename }
        return metadata
    }

    /// Whether the file at `other` holds exactly these bytes.
    func hasSameBytes(as other: String) throws -> Bool {
        guard let mine = FileHandle(forReadingAtPath: path), let theirs = FileHandle(forReadingAtPath: other) else {
            throw FileError(description: "cannot open \(path) or \(other)")
        }
        defer {
            try? mine.close()
            try? theirs.close()
        }
        while true {
            let a = try mine.read(upToCount: 1 << 20) ?? Data()
            let b = try theirs.read(upToCount: 1 << 20) ?? Data()
            if a != b { return false }
            if a.isEmpty { return true }
        }
    }
}
