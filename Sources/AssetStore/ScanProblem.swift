/// A library entry a walk did not make a row for, and why: it could not be read, its name is not
/// valid UTF-8 (shown with `\xHH` escapes), or it is not a regular file inside the library (a link
/// leading out, a dangling link, a FIFO, a socket, a device). Reported by each scan and kept by the store for `status`; never fatal.
public struct ScanProblem: Sendable, Equatable, Codable {
    /// Relative to the root, `/`-separated; `.` for the root itself.
    public let path: String
    /// Why it was skipped, in words.
    public let message: String

    /// A skipped entry and the reason.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }
}
