#if canImport(Glibc)
import Glibc
#endif

/// A regular file opened for reading at offsets (`pread`): the one place the project's modules
/// open and read files through libc. Owns its descriptor and closes it in `deinit`.
///
/// The open is non-blocking and the type is checked before any read, so a FIFO (whose open and
/// reads wait for a writer that may never come), a device or a directory fails at once.
/// Reads retry `EINTR`. `@unchecked Sendable`: `pread` keeps no shared position, so reads from
/// several threads at once are safe.
public final class ReadOnlyFile: @unchecked Sendable {
    /// The path the file was opened at.
    public let path: String
    private let descriptor: Int32

    /// Opens `path`. Throws `unreadable` when it cannot be opened, `notARegularFile` for
    /// anything but a regular file.
    public init(path: String) throws(SystemError) {
        self.path = path
        descriptor = try path.withCString { Self.openRegularFile($0, path: path) }.get()
    }

    /// Opens the file named by `pathBytes`, a path that need not be UTF-8 (a client's file name
    /// kept byte for byte); `path` shows it with U+FFFD for such bytes. Throws as `init(path:)`.
    public init(pathBytes: [UInt8]) throws(SystemError) {
        let display = String(decoding: pathBytes, as: UTF8.self)
        path = display
        descriptor = try (pathBytes + [0]).withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { Self.openRegularFile($0.baseAddress!, path: display) }
        }.get()
    }

    /// Opens `cPath` non-blocking and checks that it is a regular file; the descriptor or why not.
    private static func openRegularFile(_ cPath: UnsafePointer<CChar>, path: String) -> Result<Int32, SystemError> {
        var fd: Int32
        repeat { fd = open(cPath, O_RDONLY | O_CLOEXEC | O_NONBLOCK) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { return .failure(SystemError(.unreadable, SystemError.errnoMessage(), path: path)) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let message = SystemError.errnoMessage()
            close(fd)
            return .failure(SystemError(.unreadable, message, path: path))
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            return .failure(SystemError(.notARegularFile, "not a regular file (a directory, FIFO, socket or device)", path: path))
        }
        return .success(fd)
    }

    deinit { close(descriptor) }

    /// The file's size now, in bytes (0 for procfs and sysfs files, whose size is only known by
    /// reading them to the end).
    public func size() throws(SystemError) -> Int64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw SystemError(.unreadable, SystemError.errnoMessage(), path: path) }
        return Int64(info.st_size)
    }

    /// What tells one version of a file from another: which file (device and inode), and its
    /// size, modification and status-change times. Two equal stamps taken around a read mean the
    /// read saw one version; the upload client keeps one to know a file again in a later run.
    public struct Stamp: Sendable, Equatable {
        /// `st_dev` of the file system holding the file.
        public var device: UInt64
        /// `st_ino`.
        public var inode: UInt64
        /// Size in bytes.
        public var size: Int64
        /// Modification time, nanoseconds since the epoch.
        public var modifiedNanoseconds: Int64
        /// Status-change time (a rename, a `chmod`, a rewrite in place), nanoseconds since the epoch.
        public var changedNanoseconds: Int64

        public init(device: UInt64, inode: UInt64, size: Int64, modifiedNanoseconds: Int64, changedNanoseconds: Int64) {
            self.device = device
            self.inode = inode
            self.size = size
            self.modifiedNanoseconds = modifiedNanoseconds
            self.changedNanoseconds = changedNanoseconds
        }
    }

    /// The file's `Stamp` now. Throws `unreadable` when `fstat` fails.
    public func stamp() throws(SystemError) -> Stamp {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw SystemError(.unreadable, SystemError.errnoMessage(), path: path) }
        func nanoseconds(_ time: timespec) -> Int64 { Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec) }
        return Stamp(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                     modifiedNanoseconds: nanoseconds(info.st_mtim), changedNanoseconds: nanoseconds(info.st_ctim))
    }

    /// Reads up to `buffer.count` bytes at `offset`; returns how many were read, 0 at the end of
    /// the file. Throws `unreadable` on an I/O error.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(SystemError) -> Int {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
        while true {
            let n = pread(descriptor, base, buffer.count, off_t(offset))
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw SystemError(.unreadable, SystemError.errnoMessage(), path: path)
        }
    }

    /// Reads `length` bytes from `offset` (to the end of the file when `length` is nil) in pieces
    /// of at most `chunk` bytes, handing each to `body` (a digest's update). `shouldStop` is asked
    /// before each piece: true ends the work with `stopped`. Throws `truncated` when the file ends
    /// before the range does, and whatever `body` throws.
    public func forEachChunk(offset start: Int64 = 0, length: Int64? = nil, chunk: Int, shouldStop: (() -> Bool)? = nil,
                             _ body: (UnsafeRawBufferPointer) throws(SystemError) -> Void) throws(SystemError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var offset = start
        var remaining = length ?? Int64.max
        while remaining > 0 {
            if shouldStop?() == true { throw SystemError(.stopped, "the hashing was stopped before it finished", path: path) }
            let wanted = Int(min(Int64(chunk), remaining))
            let count = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted]), at: offset)
            if count == 0 {
                if length == nil { return }
                throw SystemError(.truncated, "the file ended before the range being hashed", path: path)
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += Int64(count)
            remaining -= Int64(count)
        }
    }

    /// Up to `count` bytes at `offset`: fewer only where the file ends.
    public func bytes(at offset: Int64, count: Int) throws(SystemError) -> [UInt8] {
        guard count > 0, offset >= 0 else { return [] }
        var failure: SystemError?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, filled in
            filled = 0
            while filled < count {
                do throws(SystemError) {
                    let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[filled...]),
                                     at: offset + Int64(filled))
                    if n == 0 { break }
                    filled += n
                } catch {
                    failure = error
                    break
                }
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// The whole file at `path`, read to its end. Throws `tooLarge` past `limit` bytes, and as
    /// `init(path:)` and `read(into:at:)`.
    public static func contents(of path: String, limit: Int) throws(SystemError) -> [UInt8] {
        let file = try ReadOnlyFile(path: path)
        var bytes: [UInt8] = []
        let expected = Int(clamping: try file.size())
        guard expected <= limit else { throw SystemError(.tooLarge, "\(expected) bytes is more than \(limit) allowed", path: path) }
        bytes.reserveCapacity(expected > 0 ? expected : 4096)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { chunk.deallocate() }
        while true {
            let n = try file.read(into: chunk, at: Int64(bytes.count))
            if n == 0 { return bytes }
            guard bytes.count + n <= limit else {
                throw SystemError(.tooLarge, "more than \(limit) bytes", path: path)
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<n]))
        }
    }
}
