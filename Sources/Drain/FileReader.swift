import SystemSupport

/// Reads small text files (procfs, sysfs, cgroup limits) through `SystemSupport.ReadOnlyFile`, and
/// hashes library files for the scans through `SystemSupport.SHA256`.
public enum FileReader {
    /// The whole file as UTF-8, or nil when it cannot be read or holds more than 1 MiB (none of
    /// the files the probes read comes near that).
    public static func read(_ path: String) -> String? {
        guard let bytes = try? ReadOnlyFile.contents(of: path, limit: 1 << 20) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The SHA-256 of the file at `path` as lowercase hex, as analysis banks it; nil when it cannot
    /// be read. What the runners' scans hash a file with whose stamp changed while its size and
    /// modification time did not (`AssetStore.scan(rehash:)`).
    public static func sha256Hex(_ path: String) -> String? {
        try? SHA256.hex(path: path)
    }
}
