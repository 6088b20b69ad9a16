/// Where the memory guard reads its numbers. The paths are parameters so tests can point them at
/// temporary files standing in for /proc and /sys.
public struct MemoryProbe: Sendable {
    /// `/proc/self/cgroup`: which cgroup this process is in.
    public var procSelfCgroup = "/proc/self/cgroup"
    /// Where the cgroup filesystem is mounted (v2 unified; v1 controllers below it).
    public var cgroupMount = "/sys/fs/cgroup"
    /// `/proc/meminfo`, for physical memory.
    public var meminfo = "/proc/meminfo"
    /// `/proc/self/status`, for the resident set (VmRSS).
    public var procSelfStatus = "/proc/self/status"
    /// Reads a small file's text, or nil. Replaceable for tests.
    public var readFile: @Sendable (String) -> String? = { FileReader.read($0) }

    public init() {}

    /// The cgroup's memory limit and current use in bytes (v2 `memory.max`/`memory.current`, or v1
    /// `memory.limit_in_bytes`/`memory.usage_in_bytes`); nil when there is no limit.
    public func cgroupMemory() -> (limit: Int, current: Int?)? {
        guard let membership = readFile(procSelfCgroup) else { return nil }
        for line in membership.split(separator: "\n") {
            // hierarchy-ID:controllers:path
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            let path = String(parts[2])
            if parts[0] == "0" && parts[1].isEmpty {
                // v2: walk up from our cgroup; the tightest limit on the way applies.
                var best: (limit: Int, current: Int?)?
                var dir = path
                while true {
                    let base = cgroupMount + (dir == "/" ? "" : dir)
                    if let text = readFile(base + "/memory.max"), let limit = Int(text.trimmed), limit > 0 {
                        let current = readFile(base + "/memory.current").flatMap { Int($0.trimmed) }
                        if let tighter = best, tighter.limit <= limit { } else { best = (limit, current) }
                    }
                    if dir == "/" || dir.isEmpty { break }
                    dir = parentPath(dir)
                }
                if let best { return best }
            } else if parts[1].split(separator: ",").contains("memory") {
                let base = cgroupMount + "/memory" + (path == "/" ? "" : path)
                // v1 reports "no limit" as a huge number near Int64.max.
                if let text = readFile(base + "/memory.limit_in_bytes"), let limit = Int(text.trimmed), limit > 0, limit < 1 << 60 {
                    let current = readFile(base + "/memory.usage_in_bytes").flatMap { Int($0.trimmed) }
                    return (limit, current)
                }
            }
        }
        return nil
    }

    /// Physical memory (MemTotal) in bytes.
    public func physicalMemory() -> Int? {
        kilobytes(field: "MemTotal:", in: readFile(meminfo))
    }

    /// This process's resident set (VmRSS) in bytes.
    public func residentSet() -> Int? {
        kilobytes(field: "VmRSS:", in: readFile(procSelfStatus))
    }

    private func kilobytes(field: String, in text: String?) -> Int? {
        guard let text else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field) {
            let number = line.dropFirst(field.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) }
            return number.map { $0 * 1024 }
        }
        return nil
    }

    private func parentPath(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }
}

extension String {
    var trimmed: String {
        String(drop { $0 == " " || $0 == "\n" }.reversed().drop { $0 == " " || $0 == "\n" }.reversed())
    }
}
