#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The libc calls FaceAnalysis makes, each wrapped once.
enum SystemCalls {
    /// Cascade files larger than this are refused before they are read (the largest OpenCV ships
    /// is under 2 MB).
    static let maxCascadeBytes = 64 << 20

    /// The whole regular file at `path`.
    static func readFile(_ path: String) throws(FaceAnalysisError) -> [UInt8] {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw FaceAnalysisError(.unreadable, String(cString: strerror(errno)), path: path)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw FaceAnalysisError(.unreadable, "not a regular file", path: path)
        }
        let size = Int(info.st_size)
        guard size <= maxCascadeBytes else {
            throw FaceAnalysisError(.unreadable, "\(size) bytes is larger than a cascade can be", path: path)
        }
        guard let file = fopen(path, "rb") else {
            throw FaceAnalysisError(.unreadable, String(cString: strerror(errno)), path: path)
        }
        defer { fclose(file) }
        var bytes = [UInt8](repeating: 0, count: size)
        let got = bytes.withUnsafeMutableBytes { fread($0.baseAddress, 1, size, file) }
        if got < size, ferror(file) != 0 {
            throw FaceAnalysisError(.unreadable, String(cString: strerror(errno)), path: path)
        }
        return Array(bytes.prefix(got))
    }

    /// Monotonic time in nanoseconds, for the benchmark.
    static func monotonicNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}
