import SystemSupport

/// A photo's bytes in memory, read whole through one open: what analysis probes, decodes, hashes
/// and reads the capture date from, so all four see one version of the file (`read(_:)`), and
/// what the C decoders read without a copy of their own.
public final class PhotoBytes: @unchecked Sendable {
    // Written once at creation, then only read: safe to share between threads.
    private let storage: UnsafeMutableRawBufferPointer
    /// The number of bytes.
    public let count: Int
    /// The path the bytes were read from, for messages; nil for bytes handed over.
    public let path: String?

    /// How many times `read` tries for a version that holds still before it gives up.
    static let readAttempts = 3

    /// A copy of `bytes` (a fuzzer's input, a test's).
    public init(copying bytes: some Collection<UInt8>) {
        count = bytes.count
        storage = .allocate(byteCount: max(count, 1), alignment: 16)
        _ = storage.initializeMemory(as: UInt8.self, from: bytes)
        path = nil
    }

    private init(storage: UnsafeMutableRawBufferPointer, count: Int, path: String) {
        (self.storage, self.count, self.path) = (storage, count, path)
    }

    deinit { storage.deallocate() }

    /// Reads the regular file at `path` whole, through one open. The file's stamp (device, inode,
    /// size, modification and status-change times) is taken before and after the read, and the
    /// read is kept only when they are equal and it got every byte: then no write, truncation or
    /// `touch` happened in between, and the bytes are one version of the file. A file still being
    /// written is read again, up to `readAttempts` times. Throws `unreadable` (with the system's
    /// words, or saying the file kept changing) or `empty`.
    public static func read(_ path: String) throws(DecodeError) -> PhotoBytes {
        let read = try translatingSystemErrors({ DecodeError($0, path: path) }) { () throws(SystemError) -> PhotoBytes? in
            let file = try ReadOnlyFile(path: path)
            for _ in 0..<readAttempts {
                let before = try file.stamp()
                guard before.size > 0 else { return nil }
                guard before.size < Int64(Int.max / 2) else { throw SystemError(.unreadable, "the file is too large to read", path: path) }
                let size = Int(before.size)
                let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
                var filled = 0
                do throws(SystemError) {
                    while filled < size {
                        let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: storage[filled...]), at: Int64(filled))
                        if n == 0 { break }
                        filled += n
                    }
                } catch {
                    storage.deallocate()
                    throw error
                }
                if filled == size, try file.stamp() == before {
                    return PhotoBytes(storage: storage, count: size, path: path)
                }
                storage.deallocate()
            }
            throw SystemError(.unreadable, "the file kept changing while it was read (still being written?)", path: path)
        }
        guard let read else { throw DecodeError(.empty, "the file is empty", path: path) }
        return read
    }

    /// The bytes, for the length of `body`.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// The first byte's address, for a C decoder (alive as long as this object).
    var base: UnsafePointer<UInt8> { UnsafePointer(storage.baseAddress!.assumingMemoryBound(to: UInt8.self)) }

    /// Up to `length` bytes at `offset`: fewer where the bytes end, none outside them.
    func slice(at offset: Int64, count length: Int) -> [UInt8] {
        guard length > 0, offset >= 0, offset < Int64(count) else { return [] }
        let start = Int(offset)
        let end = start + min(length, count - start)
        return Array(UnsafeRawBufferPointer(rebasing: storage[start..<end]))
    }
}
