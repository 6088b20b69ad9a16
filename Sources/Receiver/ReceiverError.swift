#if canImport(Glibc)
import Glibc
#endif
import SystemSupport

/// The one error type of the Receiver module: a stable code a caller can switch on, a message a
/// person can act on, and the `errno` of the system call that failed, when one did.
/// Messages never contain the bearer token or request bodies.
public struct ReceiverError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What went wrong, stable across releases.
    public enum Code: String, Sendable {
        /// A configuration value is unusable (bad host, empty directory, zero limits).
        case invalidConfiguration = "invalid-configuration"
        /// The listening socket could not be created, bound or listened on.
        case bindFailed = "bind-failed"
        /// `start()` was called twice, or `run()` after `stop()`.
        case invalidState = "invalid-state"
        /// A file-system or socket call failed.
        case io = "io"
        /// The disk is full (ENOSPC or EDQUOT).
        case diskFull = "disk-full"
        /// A stored metadata file could not be read back.
        case corruptMetadata = "corrupt-metadata"
        /// An account or device name outside `[A-Za-z0-9._-]{1,64}` (`serve accounts add`, `tokens add`).
        case invalidName = "invalid-name"
        /// An account of that name exists already.
        case alreadyExists = "already-exists"
        /// No account of that name (`serve tokens add`).
        case unknownAccount = "unknown-account"
        /// No token with that id (`serve tokens revoke`).
        case unknownToken = "unknown-token"
    }

    /// The stable code.
    public let code: Code
    /// A human-readable explanation.
    public let message: String
    /// The `errno` of the failed system call, if the cause was one.
    public let systemErrno: Int32?

    /// Makes an error with an optional `errno` cause.
    public init(code: Code, message: String, systemErrno: Int32? = nil) {
        self.code = code
        self.message = message
        self.systemErrno = systemErrno
    }

    /// An error for a failed system call named `call`, with `errno`'s text; ENOSPC/EDQUOT become
    /// `.diskFull`.
    static func system(_ call: String, _ err: Int32, context: String = "") -> ReceiverError {
        let code: Code = (err == ENOSPC || err == EDQUOT) ? .diskFull : .io
        let reason = Syscalls.errorText(err)
        let suffix = context.isEmpty ? "" : " (\(context))"
        return ReceiverError(code: code, message: "\(call) failed: \(reason)\(suffix)", systemErrno: err)
    }

    /// A failed read of a stored file or a failed digest: `io`, with what happened and the path.
    init(_ error: SystemError) {
        self.init(code: .io, message: error.description)
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
