#if canImport(Glibc)
import Glibc
#endif

/// Reads small text files (procfs, sysfs) with libc: one place for the calls.
public enum FileReader {
    /// The whole file as UTF-8 (up to 1 MiB), or nil when it cannot be read.
    public static func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, 4096, file) }
            if n == 0 { break }
            bytes += chunk.prefix(n)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
