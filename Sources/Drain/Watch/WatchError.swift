/// Why the library could not be watched (or not all of it): a stable code, a message a person
/// can act on, and the errno of the call that failed.
public struct WatchError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// No inotify instance: the kernel has none, or the user has `fs.inotify.max_user_instances`.
        case unavailable = "inotify-unavailable"
        /// The user's `fs.inotify.max_user_watches` is reached: folders past it are not watched.
        case watchLimit = "watch-limit"
        /// A folder could not be watched (gone, unreadable).
        case unwatchable
    }

    public let code: Code
    public let message: String
    /// The errno of the call that failed.
    public let errno: Int32?

    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
