#if canImport(Glibc)
import Glibc
#endif

/// What went wrong in a file read or a digest: a stable code, the path when there is one, and
/// the C library's explanation. Each module turns it into its own error type with its own words
/// for the user (a photo that cannot be read, a model that cannot be loaded, ...).
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable identifiers for what failed.
    public enum Code: String, Sendable, Equatable {
        /// The file could not be opened or read (missing, permission, I/O error).
        case unreadable
        /// The path names a directory, FIFO, socket or device.
        case notARegularFile = "not-a-regular-file"
        /// The file holds more bytes than the caller accepts.
        case tooLarge = "too-large"
        /// The file ended before the range the caller asked for.
        case truncated
        /// libcrypto could not compute the digest (it could not allocate, or failed).
        case digestFailed = "digest-failed"
        /// The caller asked the work to stop before it finished.
        case stopped
    }

    public let code: Code
    /// The file concerned, when there is one.
    public let path: String?
    /// What happened, in words (the C library's `strerror` text where it gave one).
    public let message: String

    public init(_ code: Code, _ message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    /// `strerror` of the current `errno`, read at once (the next libc call may change it).
    static func errnoMessage() -> String {
        String(cString: strerror(errno))
    }

    public var description: String {
        if let path { return "\(path): \(message)" }
        return message
    }
}

/// Runs `body` and hands a `SystemError` it throws to `translate`: how a module turns a failed
/// read or digest into its own error type, with its own words, at the call.
public func translatingSystemErrors<T, Failure: Error>(
    _ translate: (SystemError) -> Failure, _ body: () throws(SystemError) -> T
) throws(Failure) -> T {
    do { return try body() } catch { throw translate(error) }
}
