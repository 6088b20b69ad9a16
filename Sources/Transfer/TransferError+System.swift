import SystemSupport

extension TransferError {
    /// A failed file read or digest in the words Transfer has always shown: the file is
    /// `file-unreadable` (a permanent failure: retrying reads the same file), a stop is
    /// `cancelled`, and a libcrypto failure `invalid-request`. `unreadable` is the message for a
    /// file that cannot be opened or read at that step.
    init(_ error: SystemError, unreadable: String = "the file could not be opened") {
        switch error.code {
        case .unreadable: self.init(.fileUnreadable, unreadable)
        case .notARegularFile: self.init(.fileUnreadable, "the path is not a regular file (a directory, FIFO, socket or device)")
        case .tooLarge, .truncated: self.init(.fileUnreadable, error.message)
        case .stopped: self.init(.cancelled, error.message)
        case .digestFailed: self.init(.invalidRequest, error.message)
        }
    }

    /// Runs `body`, a read or digest through `SystemSupport`, throwing its failure as above.
    static func translating<T>(unreadable: String = "the file could not be opened",
                               _ body: () throws(SystemError) -> T) throws(TransferError) -> T {
        try translatingSystemErrors({ TransferError($0, unreadable: unreadable) }, body)
    }
}
