import Foundation

/// The receiver's disk fills up; `wake` runs under a memory cap.
enum ResourceScenarios {
    /// The receiver's directory on a small tmpfs: uploads fail with a clear error (507) and nothing
    /// partial is listed; once the tmpfs grows, the same drain (still retrying) finishes. Where no
    /// tmpfs can be mounted (not root), the receiver's own disk-full injection stands in
    /// (`PHOTODRAIN_SERVE_DISK_FULL_AFTER`, test-only) and "space comes back" is a restart without it.
    static func diskFull(_ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated("receiver disk full", context) { run, random, result in
            var mounted = false
            let rig = try Rig(context: context, name: "disk-full-\(run)") { library in
                // Room for the receiver's bookkeeping and a few photos.
                mounted = Mount.tmpfs(at: library.received, size: "1m")
                return mounted ? [:] : ["PHOTODRAIN_SERVE_DISK_FULL_AFTER": "900000"]
            }
            defer { if mounted { Mount.unmount(rig.library.received) } }
            result.notes.append("run \(run): " + (mounted ? "1 MiB tmpfs under the receiver's --dir"
                                                         : "no tmpfs (mount refused): the receiver's injected ENOSPC after 900 kB"))
            try rig.library.addPhotos(context.photos, samples: context.samples, random: &random)
            // Plenty of attempts: a full disk is transient, and the space comes back below.
            let drain = try rig.tool.start(rig.drainArguments(["--max-attempts", "1000"]), name: "drain")
            let deadline = Date().addingTimeInterval(60)
            while rig.serve.log.components(separatedBy: " 507").count <= 3 && drain.isRunning && Date() < deadline {
                usleep(50_000)
            }
            let refusals = rig.serve.log.components(separatedBy: " 507").count - 1
            result.faults += refusals
            // While the disk is full: everything listed is whole, nothing partial is visible.
            let during = rig.audit(expectAll: false)
            result.corrupted += during.corrupted
            result.duplicates += during.duplicates
            result.notes += during.notes
            if refusals == 0 { result.failures.append("run \(run): the receiver never answered 507") }
            let objects = rig.space + "/objects"
            let unlisted = ((try? FileManager.default.contentsOfDirectory(atPath: objects)) ?? [])
                .filter { !$0.hasSuffix(".json") && !FileManager.default.fileExists(atPath: objects + "/" + $0 + ".json") }
            if !unlisted.isEmpty { result.failures.append("run \(run): \(unlisted.count) object file(s) without a sidecar while full") }
            result.notes.append("run \(run): \(refusals) requests refused with 507 Insufficient Storage while full; \(during.listed) whole objects listed")
            // Space comes back.
            if mounted {
                if !Mount.resize(rig.library.received, size: "512m") { result.failures.append("could not grow the tmpfs") }
            } else {
                rig.serve.stop()
                rig.serve.environment = [:]
                try rig.serve.start()
            }
            drain.wait(seconds: 240)
            // The client either rode it out (resuming from the server's offset once space was back)
            // or said why it failed: a failure it reports must name the storage error.
            let said = (drain.stdout + drain.stderr).lowercased()
            let reported = said.split(separator: "\n").filter { $0.contains("\"event\":\"upload-failed\"") }
            if reported.contains(where: { !($0.contains("507") || $0.contains("storage") || $0.contains("space")) }) {
                result.failures.append("run \(run): drain reported a failure that does not name the storage error: \(reported.prefix(2))")
            }
            result.notes.append("run \(run): drain reported \(reported.count) failure line(s) while full")
            try rig.drainUntilDone(into: &result)
            rig.conclude(&result, photos: context.photos)
        }
    }

    /// `wake` in a memory-capped cgroup (v1 memory controller or v2, whichever is writable here;
    /// else `--memory-limit`): it must never be killed for memory, must finish across
    /// invocations while an agent uploads, and must analyse the large photos at the scale it
    /// would with no cap: a verdict from a photo shrunk to fit would be banked as its own and
    /// never redone, so memory pressure may only defer a photo, never shrink it.
    static func memoryCappedWake(_ context: MatrixContext) throws -> ScenarioResult {
        var result = ScenarioResult(name: "memory-capped wake")
        var random = SeededRandom.forScenario(result.name, seed: context.seed)
        // Under the cap a 12-megapixel photo fits only at its analysis scale (1/2, about 58 MiB by
        // the guard's estimate, plus its 24 MiB reserve and the process's own charge), and not
        // beside a second one: the guard must admit work within the headroom, one photo at a
        // time. (It was 64 MiB while photos were analysed smaller to fit; they no longer are.)
        let cap = 128 << 20
        let large = try Sample.large(width: 4000, height: 3000, random: &random)
        for run in 0..<context.runs {
            let rig = try Rig(context: context, name: "memory-wake-\(run)")
            try rig.library.addPhotos(context.photos, samples: context.samples, random: &random)
            try rig.library.addPhotos(3, samples: [large], prefix: "large", random: &random)
            let group = MemoryCgroup(name: "photodrain-reliability-\(getpid())-\(run)", limit: cap)
            let agent = try rig.tool.start(["agent", rig.library.folder, "--store", rig.library.store, "--slots", "2"] + rig.tokenArguments, name: "agent")
            var wake = ["wake", rig.library.folder, "--store", rig.library.store, "--to", rig.url, "--page-size", "6"] + Rig.analysis
            // Without a cgroup the limit counts the whole resident set (about 60 MB for a debug
            // build, shared libraries included), so the same working room needs 64M more.
            if group == nil { wake += ["--memory-limit", "192M"] }
            var statuses: [Int32] = []
            for _ in 0..<80 {
                let status: Int32
                if let group {
                    // A shell joins the cgroup, then becomes photodrain (same pid, same cgroup).
                    let script = "echo $$ > '\(group.procsFile)' && exec \"$0\" \"$@\""
                    let child = try Child("/bin/sh", ["-c", script, context.binary] + wake, logPrefix: rig.library.logs + "/wake")
                    status = child.wait(seconds: 120)
                } else {
                    status = try rig.tool.run(wake, name: "wake", seconds: 120).status
                }
                statuses.append(status)
                if status == 0 || status == 128 + SIGKILL { break }
                usleep(300_000)
            }
            agent.signal(SIGTERM)
            agent.wait(seconds: 30)
            result.faults += 1
            if statuses.contains(128 + SIGKILL) { result.failures.append("run \(run): wake was SIGKILLed (memory)") }
            if statuses.last != 0 { result.failures.append("run \(run): wake did not finish: \(statuses)") }
            if let group {
                let kills = group.oomKills
                if kills > 0 { result.failures.append("run \(run): \(kills) OOM kill(s) in the cgroup") }
                result.notes.append("run \(run): \(group.kind) cap \(cap >> 20) MiB, peak \(group.peak.map { "\($0 >> 20) MiB" } ?? "unknown"), \(statuses.count) wake invocations, OOM kills \(kills)")
                group.remove()
            } else {
                result.notes.append("run \(run): no writable cgroup; --memory-limit 192M (the resident set counts); \(statuses.count) wake invocations")
            }
            // The large photos' verdicts: analysed at 1/2 (2000x1500), as with no cap.
            let verdicts = try rig.tool.run(["verdicts", rig.library.folder, "--store", rig.library.store], name: "verdicts").child.stdout
            let large = verdicts.split(separator: "\n").filter { $0.contains("\"path\":\"large-") }
            let full = large.filter { $0.contains("\"analysisSize\":{\"height\":1500,\"width\":2000}") }
            if large.count != 3 || full.count != 3 {
                result.failures.append("run \(run): \(full.count) of \(large.count) large photos analysed at 2000x1500")
            }
            rig.conclude(&result, photos: context.photos + 3)
        }
        return result
    }
}

/// mount(8) for the disk-full scenario (root only).
enum Mount {
    static func tmpfs(at path: String, size: String) -> Bool {
        run(["mount", "-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path])
    }

    static func resize(_ path: String, size: String) -> Bool {
        run(["mount", "-o", "remount,size=\(size)", path])
    }

    static func unmount(_ path: String) { _ = run(["umount", path]) }

    private static func run(_ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}

/// A memory cgroup made for one run: v1 (`memory.limit_in_bytes`) or v2 (`memory.max`).
struct MemoryCgroup {
    let path: String
    let kind: String

    init?(name: String, limit: Int) {
        let candidates = [("/sys/fs/cgroup/memory/" + name, "cgroup v1", "memory.limit_in_bytes"),
                          ("/sys/fs/cgroup/" + name, "cgroup v2", "memory.max")]
        for (path, kind, limitFile) in candidates {
            guard FileManager.default.fileExists(atPath: (path as NSString).deletingLastPathComponent + "/cgroup.procs"),
                  mkdir(path, 0o755) == 0 || errno == EEXIST else { continue }
            guard (try? String(limit).write(toFile: path + "/" + limitFile, atomically: false, encoding: .utf8)) != nil else {
                rmdir(path)
                continue
            }
            self.path = path
            self.kind = kind
            return
        }
        return nil
    }

    var procsFile: String { path + "/cgroup.procs" }

    /// The OOM kills the kernel made in this group (v1: `oom_kill` in memory.oom_control; v2:
    /// `oom_kill` in memory.events).
    var oomKills: Int {
        for file in ["memory.oom_control", "memory.events"] {
            guard let text = try? String(contentsOfFile: path + "/" + file, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") where line.hasPrefix("oom_kill ") {
                return Int(line.split(separator: " ").last ?? "") ?? 0
            }
        }
        return 0
    }

    /// The highest use seen (v1 max_usage_in_bytes; v2 memory.peak where the kernel has it).
    var peak: Int? {
        for file in ["memory.max_usage_in_bytes", "memory.peak"] {
            if let text = try? String(contentsOfFile: path + "/" + file, encoding: .utf8),
               let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) { return value }
        }
        return nil
    }

    func remove() { rmdir(path) }
}
