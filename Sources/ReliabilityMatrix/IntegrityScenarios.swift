import Foundation

/// The receiver's disk changes a stored object under it: one bit flipped, the size and the mtime
/// kept (as a rewrite in place that restores the mtime would leave it). `serve` must stop
/// answering for it (`verify` finds it missing, and no later upload is deduplicated to it),
/// `verify --repair` and a drain must send it again, and afterwards every photo must be there,
/// intact and verified: no photo stays marked uploaded with wrong bytes.
enum IntegrityScenarios {
    static func bitFlip(_ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated("bit flipped on the receiver's disk", context) { run, random, result in
            let rig = try Rig(context: context, name: "bit-flip-\(run)")
            try rig.library.addPhotos(context.photos, samples: context.samples, random: &random)
            try rig.drainUntilDone(into: &result)
            let photos = context.photos

            let objects = rig.space + "/objects"
            let ids = ((try? FileManager.default.contentsOfDirectory(atPath: objects)) ?? []).filter { !$0.hasSuffix(".json") }.sorted()
            guard !ids.isEmpty else {
                result.failures.append("run \(run): no object to flip")
                rig.conclude(&result, photos: photos)
                return
            }
            let id = ids[random.int(0..<ids.count)]
            let (offset, bit) = try flipBit(objects + "/" + id, random: &random)
            result.faults += 1
            result.notes.append("run \(run): bit \(bit) of byte \(offset) flipped in object \(id), size and mtime kept")

            let (found, before) = try rig.tool.run(["verify", rig.library.folder, "--store", rig.library.store] + rig.tokenArguments, name: "verify", seconds: 120)
            if found != 1 || !before.stdout.contains("\(photos - 1) present, 1 missing, 0 mismatched") {
                result.failures.append("run \(run): verify after the flip exited \(found), want 1 with the object missing: \(before.stdout.suffix(300))")
            }
            let quarantined = rig.space + "/quarantine/" + id
            if !FileManager.default.fileExists(atPath: quarantined) || !FileManager.default.fileExists(atPath: quarantined + ".json") {
                result.failures.append("run \(run): object \(id) and its sidecar are not in quarantine/")
            }
            if rig.serve.log.components(separatedBy: "moved with its sidecar to quarantine/\(id)").count != 2 {
                result.failures.append("run \(run): the receiver did not log the quarantine of \(id) exactly once")
            }

            let (repairStatus, repair) = try rig.tool.run(["verify", rig.library.folder, "--store", rig.library.store, "--repair"] + rig.tokenArguments,
                                                          name: "verify-repair", seconds: 120)
            if repairStatus != 1 || !repair.stdout.contains("1 queued again") {
                result.failures.append("run \(run): verify --repair exited \(repairStatus): \(repair.stdout.suffix(300))")
            }
            try rig.drainUntilDone(into: &result)
            let (after, verify) = try rig.tool.run(["verify", rig.library.folder, "--store", rig.library.store] + rig.tokenArguments, name: "verify-after", seconds: 120)
            if after != 0 || !verify.stdout.contains("\(photos) present, 0 missing, 0 mismatched") {
                result.failures.append("run \(run): verify after the repair exited \(after): \(verify.stdout.suffix(300))")
            }
            rig.conclude(&result, photos: photos)
        }
    }

    /// Flips one seeded bit of the file at `path` in place and puts its access and modification
    /// times back (`touch -r`): only its change time says it changed. Returns the byte and bit.
    static func flipBit(_ path: String, random: inout SeededRandom) throws -> (offset: Int, bit: Int) {
        var info = stat()
        guard stat(path, &info) == 0, info.st_size > 0 else { throw MatrixError("cannot stat \(path)") }
        let offset = random.int(0..<Int(info.st_size))
        let bit = random.int(0..<8)
        let fd = open(path, O_RDWR)
        guard fd >= 0 else { throw MatrixError("cannot open \(path) for writing") }
        defer { close(fd) }
        var byte: UInt8 = 0
        guard pread(fd, &byte, 1, off_t(offset)) == 1 else { throw MatrixError("cannot read \(path)") }
        byte ^= UInt8(1) << UInt8(bit)
        guard pwrite(fd, &byte, 1, off_t(offset)) == 1 else { throw MatrixError("cannot write \(path)") }
        var times = [info.st_atim, info.st_mtim]
        guard futimens(fd, &times) == 0 else { throw MatrixError("cannot restore the times of \(path)") }
        return (offset, bit)
    }
}
