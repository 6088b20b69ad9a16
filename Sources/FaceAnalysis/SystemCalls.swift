#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SystemSupport

/// The libc calls FaceAnalysis makes, each wrapped once.
enum SystemCalls {
    /// Cascade files larger than this are refused before they are read (the largest OpenCV ships
    /// is under 2 MB).
    static let maxCascadeBytes = 64 << 20

    /// The whole regular file at `path` (a cascade or a network file), read by
    /// `SystemSupport.ReadOnlyFile`. Throws `unreadable` with the system's words.
    static func readFile(_ path: String) throws(FaceAnalysisError) -> [UInt8] {
        do {
            return try ReadOnlyFile.contents(of: path, limit: maxCascadeBytes)
        } catch {
            switch error.code {
            case .notARegularFile: throw FaceAnalysisError(.unreadable, "not a regular file", path: path)
            case .tooLarge: throw FaceAnalysisError(.unreadable, "larger than a cascade can be (\(error.message))", path: path)
            default: throw FaceAnalysisError(.unreadable, error.message, path: path)
            }
        }
    }

    /// Monotonic time in nanoseconds, for the benchmark.
    static func monotonicNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}
