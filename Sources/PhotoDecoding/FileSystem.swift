import SystemSupport

/// PhotoDecoding's reads outside the image libraries, through `SystemSupport.ReadOnlyFile`, with
/// failures in its own words: `unreadable`, with the system's explanation.
enum FileSystem {
    /// The size of the regular file at `path`.
    static func fileSize(_ path: String) throws(DecodeError) -> Int {
        try translatingSystemErrors({ DecodeError($0, path: path) }) { () throws(SystemError) in
            Int(clamping: try ReadOnlyFile(path: path).size())
        }
    }

    /// Up to `count` bytes from the start of the file at `path`.
    static func leadingBytes(_ path: String, count: Int) throws(DecodeError) -> [UInt8] {
        try translatingSystemErrors({ DecodeError($0, path: path) }) { () throws(SystemError) in
            try ReadOnlyFile(path: path).bytes(at: 0, count: count)
        }
    }
}

extension DecodeError {
    /// A failed read of the photo: `unreadable`, the system's words ("not a regular file" for a
    /// directory, FIFO or device, as probing has always said).
    init(_ error: SystemError, path: String) {
        self.init(.unreadable, error.code == .notARegularFile ? "not a regular file" : error.message, path: path)
    }
}
