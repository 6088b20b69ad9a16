#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The libc calls PhotoDecoding makes outside the image libraries, each wrapped once.
enum FileSystem {
    /// The size of the regular file at `path`.
    static func fileSize(_ path: String) throws(DecodeError) -> Int {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw DecodeError(.unreadable, String(cString: strerror(errno)), path: path)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw DecodeError(.unreadable, "not a regular file", path: path)
        }
        return Int(info.st_size)
    }

    /// Up to `count` bytes from the start of the file at `path`.
    static func leadingBytes(_ path: String, count: Int) throws(DecodeError) -> [UInt8] {
        guard let file = fopen(path, "rb") else {
            throw DecodeError(.unreadable, String(cString: strerror(errno)), path: path)
        }
        defer { fclose(file) }
        var bytes = [UInt8](repeating: 0, count: count)
        let got = bytes.withUnsafeMutableBytes { fread($0.baseAddress, 1, count, file) }
        if got < count, ferror(file) != 0 {
            throw DecodeError(.unreadable, String(cString: strerror(errno)), path: path)
        }
        return Array(bytes.prefix(got))
    }
}

/// A file read at offsets (pread), for walking containers without reading image data.
final class ContainerFile {
    private let fd: Int32
    let size: Int64

    init?(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            return nil
        }
        self.fd = fd
        size = Int64(info.st_size)
    }

    deinit { close(fd) }

    /// Up to `count` bytes at `offset` (fewer at the end of the file or on an error).
    func read(at offset: Int64, count: Int) -> [UInt8] {
        guard count > 0, offset >= 0, offset < size else { return [] }
        let wanted = Int(min(Int64(count), size - offset))
        return [UInt8](unsafeUninitializedCapacity: wanted) { buffer, filled in
            filled = 0
            while filled < wanted {
                let n = pread(fd, buffer.baseAddress! + filled, wanted - filled, off_t(offset) + off_t(filled))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                filled += n
            }
        }
    }
}
