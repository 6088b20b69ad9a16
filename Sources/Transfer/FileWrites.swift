#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The POSIX calls Transfer makes to write its own files (the resume checkpoints), each wrapped once.

/// Renames `from` to `to` (`rename(2)`), replacing `to` atomically when it exists. False on failure.
func renameFile(_ from: String, to: String) -> Bool {
    rename(from, to) == 0
}

/// Writes `bytes` to the file `path`, created with `mode` or emptied first, without fsync
/// (Foundation's atomic write fsyncs, a disk flush per checkpoint). False on any failure, the file
/// then possibly left partly written for the caller to remove.
func writeWholeFile(_ path: String, bytes: [UInt8], mode: mode_t) -> Bool {
    var fd: Int32
    repeat { fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode) } while fd < 0 && errno == EINTR
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var written = 0
    while written < bytes.count {
        let n = bytes.withUnsafeBytes { raw -> Int in
            guard let base = raw.baseAddress else { return 0 }
            return write(fd, base + written, raw.count - written)
        }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return false }
        written += n
    }
    return true
}

/// Opens `path` for writing, created with `mode` or emptied first, never through a symbolic link;
/// nil on failure.
func openForWriting(_ path: String, mode: mode_t) -> Int32? {
    var fd: Int32
    repeat { fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode) } while fd < 0 && errno == EINTR
    return fd >= 0 ? fd : nil
}

/// Writes all of `bytes` to `fd`; false on failure.
func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    var written = 0
    while written < bytes.count {
        let n = write(fd, base + written, bytes.count - written)
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return false }
        written += n
    }
    return true
}

/// fsync(2) then close(2); false when either failed.
func syncAndClose(_ fd: Int32) -> Bool {
    let synced = fsync(fd) == 0
    return close(fd) == 0 && synced
}

/// close(2) without caring how it ended (a file the caller removes).
func closeFile(_ fd: Int32) {
    _ = close(fd)
}

/// The text of the last failed call's errno.
func lastErrorText() -> String {
    String(cString: strerror(errno))
}
