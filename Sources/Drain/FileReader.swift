import SystemSupport

/// Reads small text files (procfs, sysfs, cgroup limits) through `SystemSupport.ReadOnlyFile`.
public enum FileReader {
    /// The whole file as UTF-8, or nil when it cannot be read or holds more than 1 MiB (none of
    /// the files the probes read comes near that).
    public static func read(_ path: String) -> String? {
        guard let bytes = try? ReadOnlyFile.contents(of: path, limit: 1 << 20) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
