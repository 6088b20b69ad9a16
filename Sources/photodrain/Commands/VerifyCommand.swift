import AssetStore
import Foundation
import SystemSupport
import Transfer

/// `photodrain verify DIR [--to URL]`: asks the destination whether it still holds every photo the
/// store says it received, and with `--repair` queues the missing ones again.
enum VerifyCommand: Command {
    static let spec = CommandSpec(
        name: "verify",
        abstract: "Ask the destination whether it holds every photo the store says is uploaded there; --repair queues the missing ones again.",
        arguments: "DIR",
        discussion: """
        For every photo marked uploaded to the destination (--to, or the one the library's uploads
        go to), asks the destination whether it holds exactly those bytes: a photodrain serve (or a
        receiver with the same lookup) by the photo's SHA-256 (HEAD /objects/by-digest/<sha256>,
        or GET /objects/<id> when there is no such lookup); an s3:// bucket by a HEAD of the object,
        whose length, ETag (the MD5 the store computed, as the upload's proof recorded it) and,
        where the store keeps one, SHA-256 checksum must be the photo's. These are the
        destination's word about its own bytes: with --deep every object is downloaded and hashed
        here instead (a destination that lies on purpose is caught only so; it reads every byte
        back). Lists the missing and mismatched
        photos. With --repair their upload marks are removed, so the next drain or wake sends them
        again. Photos found present get their mark confirmed (a mark from before receipts were
        proven, or one made with --accept-unverified, becomes verified).

        Checks stop at the first answer that says the destination itself is wrong (a web page, a
        refused token) or unreachable; nothing is changed for the photos not yet checked.
        """ + "\n" + LibraryOptions.filterDiscussion,
        options: [LibraryOptions.store] + LibraryOptions.filters + TransferOptions.all.filter { $0.name != "accept-unverified" && $0.name != "bwlimit" } + [
            .flag("deep", "Download every object and hash it here, instead of trusting the destination's own figures (reads every byte back)."),
            .flag("repair", "Remove the upload marks of missing and mismatched photos, so the next drain or wake sends them again."),
            .option("parallel", "N", "Checks in flight at once.", default: "8"),
            .flag("json", "JSON lines: one per missing or mismatched photo, then a summary."),
        ],
        positionals: (1, 1),
        examples: [
            ("photodrain verify ~/Pictures", "check the destination the library's uploads went to"),
            ("photodrain verify ~/Pictures --repair && photodrain drain ~/Pictures --to URL", "send again what the server lost"),
            ("photodrain verify ~/Pictures --deep", "download every photo back and hash it (for a destination nobody vouches for)"),
            ("photodrain verify ~/Pictures --to s3://photos/library --json | jq -r 'select(.state == \"missing\") .path'", "list what a bucket lacks"),
        ],
        exitCodes: [(0, "every photo marked uploaded is on the destination"), (1, "some photos are missing or mismatched (queued again with --repair), or the destination refused the check (URL, token) or the store failed"),
                    (64, "usage error"), (75, "some photos could not be checked now (the destination is unreachable or busy): run again")]
    )

    struct Line: Encodable {
        let path: String
        let state: String
        var serverID: String?
        var reason: String?
        var repaired: Bool?
    }

    struct Summary: Encodable {
        let event = "summary"
        let destination: String
        var checked = 0
        var present = 0
        var missing = 0
        var mismatched = 0
        var unchecked = 0
        var repaired = 0
        var error: String?
    }

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let store = try LibraryOptions.open(arguments)
        // The .sqlite file alone holds everything once the command ends, whatever way it ends.
        defer { store.checkpoint() }
        guard let (destination, url) = try TransferOptions.recordedDestination(try store.activeDestination(), arguments, command: spec.name) else {
            throw UsageError("this library has no uploads recorded yet; pass --to URL to name a destination", command: spec.name)
        }
        // The marks are kept against where the bytes went (an S3 bucket with its endpoint).
        let identity = destination.identity.key
        try store.adoptDestination(identity, formerly: url)
        let parallel = try arguments.int("parallel", default: 8, range: 1...64)
        let repair = arguments.flag("repair")
        let deep = arguments.flag("deep")
        let json = arguments.flag("json")
        let console = Console.shared
        let marked = try store.uploadedAssets(to: identity)
        var summary = Summary(destination: identity)
        let bar = ProgressBar(title: "verifying", total: marked.count, quiet: json)
        var stop: TransferError?
        var index = 0
        while index < marked.count, stop == nil {
            let batch = Array(marked[index..<min(index + parallel, marked.count)])
            index += batch.count
            let answers = await withTaskGroup(of: (Int, Result<StoredCopy, TransferError>).self) { group in
                for (offset, entry) in batch.enumerated() {
                    group.addTask {
                        guard let sha = entry.asset.sha256 else {
                            return (offset, .failure(TransferError(.invalidRequest, "the store has no content hash for this photo")))
                        }
                        do throws(TransferError) {
                            let copy = try await UploadDestinations.storedCopy(
                                at: destination, sha256Hex: sha, size: Int64(entry.asset.size),
                                filename: (entry.asset.path as NSString).lastPathComponent, serverID: entry.serverID, deep: deep)
                            return (offset, .success(copy))
                        } catch {
                            return (offset, .failure(error))
                        }
                    }
                }
                var answers: [(Int, Result<StoredCopy, TransferError>)] = []
                for await answer in group { answers.append(answer) }
                return answers.sorted { $0.0 < $1.0 }
            }
            for (offset, answer) in answers {
                let entry = batch[offset]
                bar.advance()
                switch answer {
                case .success(.present):
                    summary.checked += 1
                    summary.present += 1
                    try store.recordVerification(entry.asset, destination: identity, present: true)
                case .success(let copy):
                    summary.checked += 1
                    var line = Line(path: entry.asset.path, state: "missing", serverID: entry.serverID)
                    if case .mismatched(let reason) = copy {
                        line = Line(path: entry.asset.path, state: "mismatched", serverID: entry.serverID, reason: reason)
                        summary.mismatched += 1
                    } else {
                        summary.missing += 1
                    }
                    if repair {
                        try store.recordVerification(entry.asset, destination: identity, present: false)
                        line.repaired = true
                        summary.repaired += 1
                    }
                    if json {
                        console.json(line)
                    } else {
                        // The reason quotes the server's object id: its control characters escaped.
                        let why = line.reason.map { ": \(TerminalText.escaped($0))" } ?? ""
                        let repaired = repair ? " (queued again)" : ""
                        console.out("\(console.red(line.state))  \(line.path)\(why)\(repaired)")
                    }
                case .failure(let error):
                    summary.unchecked += 1
                    if error.code == .invalidRequest {
                        console.err("photodrain verify: \(entry.asset.path): \(error.message)")
                    } else {
                        stop = stop ?? error
                    }
                }
            }
        }
        bar.finish()
        summary.unchecked = marked.count - summary.checked
        if let stop {
            summary.error = "\(stop.code.rawValue): \(stop.message)"
        }
        if json {
            console.json(summary)
        } else {
            var line = "\(summary.checked) of \(marked.count) photos checked at \(summary.destination): \(summary.present) present, \(summary.missing) missing, \(summary.mismatched) mismatched"
            if summary.unchecked > 0 { line += ", \(summary.unchecked) not checked" }
            if repair && summary.repaired > 0 { line += "; \(summary.repaired) queued again: the next drain or wake sends them" }
            else if summary.missing + summary.mismatched > 0 { line += "; --repair queues them again" }
            console.out(line)
        }
        if let stop {
            let advice = stop.code == .unauthorized ? " Check --to and --token-file." : ""
            console.err("photodrain verify: the destination could not be checked (\(stop.code.rawValue): \(stop.message)).\(advice)")
            if stop.isTransient { return .workRemains }
            return .failure
        }
        if summary.missing + summary.mismatched > 0 { return .failure }
        return summary.unchecked > 0 ? .workRemains : .success
    }
}
