import Foundation
import SystemSupport

/// `free-space` and `restore` SIGKILLed at seeded random points (issue 33). After every kill each
/// photo must be in place, in the trash, or byte-identical at the destination; reruns must
/// finish the job; in the end every photo is back in place with its bytes, and the receiver still
/// holds each exactly once. Runs alternate how the photos leave: into the trash and back from it;
/// into the trash, the trash emptied, and back from the destination; `--delete` and back from
/// the destination.
enum FreeSpaceScenarios {
    enum Mode: String {
        case trash
        case emptied = "trash emptied"
        case delete = "--delete"
    }

    static func killed(_ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated("SIGKILL free-space and restore", context) { run, random, result in
            let rig = try Rig(context: context, name: "kill-free-space-\(run)")
            // Large enough that hashing, moving and downloading take a while to land kills in.
            try rig.library.addPhotos(context.photos, samples: context.samples, padding: 256 << 10, random: &random)
            try rig.drainUntilDone(into: &result)
            let modes: [Mode] = context.quick ? [.emptied] : [.trash, .emptied, .delete]
            let mode = modes[run % modes.count]
            let environment = ["XDG_DATA_HOME": rig.library.root + "/data"]
            let photos = rig.library.current
            // The account's read-scope device (a laptop that frees space and restores): asking
            // the destination again, --deep and restore download, which an upload-only token may not.
            let readToken = ["--token-file", rig.readTokenFile]
            var freeSpace = ["free-space", rig.library.folder, "--store", rig.library.store, "--older-than", "0", "--max-fraction", "100%"] + readToken
            if mode == .delete { freeSpace += ["--delete", "--yes"] }
            if run % 2 == 0 { freeSpace.append("--deep") }
            let restore = ["restore", rig.library.folder, "--store", rig.library.store] + readToken
            // The kills land within a run: pauses up to a little over what a dry run takes here.
            let timing = Date()
            let (dry, _) = try rig.tool.run(freeSpace + ["--dry-run", "--deep"], name: "free-space", environment: environment)
            if dry != 0 { result.failures.append("run \(run): free-space --dry-run exited \(dry)") }
            let window = (0.0, max(0.05, Date().timeIntervalSince(timing) * 1.3))

            // Until the trash is emptied, a photo is in place or in the trash: the destination's
            // copy stands in for it only after --delete.
            try killThenFinish(freeSpace, name: "free-space", kills: context.kills, window: window, rig: rig, environment: environment,
                               photos: photos, destinationCounts: mode == .delete, random: &random, into: &result, run: run)
            let left = photos.keys.filter { FileManager.default.fileExists(atPath: rig.library.folder + "/" + $0) }
            if !left.isEmpty { result.failures.append("run \(run): free-space left \(left.count) proven photos in place: \(left.sorted().prefix(3))") }
            if mode == .emptied {
                let (status, child) = try rig.tool.run(freeSpace + ["--empty-trash"], name: "free-space", environment: environment)
                if status != 0 { result.failures.append("run \(run): --empty-trash exited \(status): \(child.stderr.suffix(300))") }
            }
            check(photos, rig: rig, destinationCounts: mode != .trash, into: &result, moment: "run \(run) after free-space (\(mode.rawValue))")

            try killThenFinish(restore, name: "restore", kills: context.kills, window: window, rig: rig, environment: environment,
                               photos: photos, destinationCounts: mode != .trash, random: &random, into: &result, run: run)
            for (path, sha) in photos.sorted(by: { $0.key < $1.key }) {
                let now = try? SHA256.hex(path: rig.library.folder + "/" + path)
                if now != sha { result.failures.append("run \(run): \(path) is not back byte for byte after restore (\(mode.rawValue))") }
            }
            let leftovers = (FileManager.default.subpaths(atPath: rig.library.folder) ?? []).filter { $0.contains(".photodrain-restore-") }
            if !leftovers.isEmpty { result.failures.append("run \(run): restore left \(leftovers)") }
            result.notes.append("run \(run): \(photos.count) photos out (\(mode.rawValue)) and back")
            rig.conclude(&result, photos: photos.count)
        }
    }

    /// Starts `arguments`, SIGKILLs it after a seeded pause in `window` seconds, checks every
    /// photo is somewhere, `kills` times; then runs it until it exits 0.
    static func killThenFinish(_ arguments: [String], name: String, kills: Int, window: (Double, Double), rig: Rig, environment: [String: String],
                               photos: [String: String], destinationCounts: Bool, random: inout SeededRandom,
                               into result: inout ScenarioResult, run: Int) throws {
        for kill in 0..<kills {
            let child = try rig.tool.start(arguments, name: name, environment: environment)
            usleep(random.micros(window.0, window.1))
            if child.signal(SIGKILL) { result.faults += 1 }
            child.wait()
            check(photos, rig: rig, destinationCounts: destinationCounts, into: &result, moment: "run \(run) after \(name) kill \(kill + 1)")
        }
        var statuses: [Int32] = []
        for _ in 0..<5 {
            let (status, _) = try rig.tool.run(arguments, name: name, environment: environment)
            statuses.append(status)
            if status == 0 { break }
        }
        if statuses.last != 0 { result.failures.append("run \(run): \(name) statuses \(statuses)") }
    }

    /// Every photo (path -> SHA-256) in place, in a trash, or (when `destinationCounts`) at the
    /// destination, with its bytes; a failure of `result` names each that is nowhere.
    static func check(_ photos: [String: String], rig: Rig, destinationCounts: Bool, into result: inout ScenarioResult, moment: String) {
        var found: Set<String> = []
        var folders = [rig.library.root + "/data/Trash/files", rig.library.folder + "/.photodrain-trash/files"]
        if destinationCounts { folders.append(rig.space + "/objects") }
        for folder in folders {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where !name.hasSuffix(".json") {
                if let sha = try? SHA256.hex(path: folder + "/" + name) { found.insert(sha) }
            }
        }
        var lost: [String] = []
        for (path, sha) in photos where !found.contains(sha) {
            if (try? SHA256.hex(path: rig.library.folder + "/" + path)) != sha { lost.append(path) }
        }
        if !lost.isEmpty {
            result.lost += lost.count
            result.failures.append("\(moment): nowhere with its bytes: \(lost.sorted().prefix(5))")
        }
    }
}
