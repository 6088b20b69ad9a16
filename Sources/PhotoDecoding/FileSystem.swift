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
