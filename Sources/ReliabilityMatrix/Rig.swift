import FaultProxy
import Foundation

/// Everything one run of a scenario needs: a library, a receiver on a fixed port, and a
/// `FaultProxy` in front of it that counts (and, when asked, breaks) what goes through.
///
/// The receiver runs with accounts, as a family's would: the clients (drain, agent, verify)
/// use an upload-only device token of the account `family`, whose objects are under
/// `received/accounts/family/`; the audit lists them with a read token of the same account.
final class Rig {
    let library: Library
    let tool: Tool
    let serve: ServeInstance
    let proxy: FaultProxy
    /// The account the clients upload to, and the files of its two device tokens.
    static let account = "family"
    let uploadTokenFile: String
    let readTokenFile: String
    /// Keep the run's folder afterwards (`--keep`).
    let keep: Bool
    static let analysis = ["--analysis-size", "96"]

    init(context: MatrixContext, name: String, plan: FaultPlan = .none,
         beforeServe: (Library) throws -> [String: String] = { _ in [:] }) throws {
        library = try Library(root: context.workRoot + "/" + name)
        keep = context.keep
        tool = Tool(binary: context.binary, logs: library.logs)
        let environment = try beforeServe(library)
        uploadTokenFile = library.root + "/phone.token"
        readTokenFile = library.root + "/auditor.token"
        let (added, _) = try tool.run(["serve", "--dir", library.received, "accounts", "add", Rig.account], name: "accounts-add", seconds: 30)
        guard added == 0 else { throw MatrixError("serve accounts add exited \(added)") }
        for (device, scope, file) in [("matrix-phone", "upload", uploadTokenFile), ("matrix-auditor", "read", readTokenFile)] {
            let (status, child) = try tool.run(["serve", "--dir", library.received, "tokens", "add", Rig.account, device, "--scope", scope],
                                               name: "tokens-add-\(device)", seconds: 30)
            guard status == 0 else { throw MatrixError("serve tokens add exited \(status)") }
            try Data(child.stdout.utf8).write(to: URL(fileURLWithPath: file))
        }
        serve = try ServeInstance(tool: tool, directory: library.received, environment: environment)
        proxy = try FaultProxy(targetPort: serve.port, plan: plan)
    }

    /// The upload URL clients use: through the proxy.
    var url: String { "http://127.0.0.1:\(proxy.port)/uploads" }
    var objectsURL: String { "http://127.0.0.1:\(serve.port)/objects" }

    /// The account's space in the receiver's directory: its objects/, uploads/, quarantine/.
    var space: String { library.received + "/accounts/" + Rig.account }

    /// `--token-file` with the upload-only device token, for drain, agent and verify.
    var tokenArguments: [String] { ["--token-file", uploadTokenFile] }

    func drainArguments(_ extra: [String] = []) -> [String] {
        ["drain", library.folder, "--store", library.store, "--to", url, "--json", "--offline-timeout", "2"] + Rig.analysis + tokenArguments + extra
    }

    /// Runs `drain` until it exits 0 (at most `runs` times); a run that never gets there is a
    /// failure of `result`'s scenario.
    func drainUntilDone(runs: Int = 8, extra: [String] = [], into result: inout ScenarioResult) throws {
        var statuses: [Int32] = []
        for _ in 0..<runs {
            let (status, _) = try tool.run(drainArguments(extra), name: "drain", seconds: 240)
            statuses.append(status)
            if status == 0 { break }
            usleep(200_000)
        }
        if statuses.last != 0 { result.failures.append("drain statuses \(statuses)") }
    }

    /// Starts `arguments` and SIGKILLs it after a seeded pause in `window` seconds, `times` times.
    func killRepeatedly(_ arguments: [String], name: String, times: Int, window: (Double, Double),
                        random: inout SeededRandom, into result: inout ScenarioResult) throws {
        for _ in 0..<times {
            let child = try tool.start(arguments, name: name)
            usleep(random.micros(window.0, window.1))
            if child.signal(SIGKILL) { result.faults += 1 }
            child.wait()
        }
    }

    /// Audits the receiver, adds the run's photos and bytes to `result`, then stops the rig.
    func conclude(_ result: inout ScenarioResult, photos: Int) {
        result.add(audit(), photos: photos, fileBytes: library.fileBytes,
                   uploadBytes: Int64(proxy.bytesForwarded(.upstream)))
        finish()
    }

    func audit(expectAll: Bool = true) -> Audit {
        let token = (try? String(contentsOfFile: readTokenFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        var audit = Audit.check(library: library, receiverDirectory: space, objectsURL: objectsURL, token: token, expectAll: expectAll)
        if audit.lost > 0 {
            // Why: the store's own account of the photos that did not arrive.
            if let (_, child) = try? tool.run(["status", library.folder, "--store", library.store, "--json"], name: "status", seconds: 60),
               let data = child.stdout.data(using: .utf8),
               let status = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
               let failed = status["failed"] as? [[String: Any]] {
                for photo in failed {
                    audit.notes.append("not stored: \(photo["path"] ?? "?") failed after \(photo["attempts"] ?? "?") attempts: \(photo["reason"] ?? "?")")
                }
            }
        }
        return audit
    }

    /// Stops the proxy and the receiver; removes the folder unless `keep`.
    func finish() {
        proxy.stop()
        serve.stop()
        if !keep { library.remove() }
    }
}

/// What every scenario shares: the binary, the samples, the seed and the size of the run.
struct MatrixContext {
    let binary: String
    let samples: [Sample]
    let seed: UInt64
    let quick: Bool
    let workRoot: String
    let keep: Bool

    /// Runs per scenario and photos per run.
    var runs: Int { quick ? 1 : 3 }
    var photos: Int { quick ? 8 : 20 }
    var kills: Int { quick ? 2 : 4 }
}

extension SeededRandom {
    /// A duration in [low, high) seconds, as microseconds for usleep.
    mutating func micros(_ low: Double, _ high: Double) -> useconds_t {
        let unit = Double(next() % 1_000_000) / 1_000_000
        return useconds_t((low + (high - low) * unit) * 1_000_000)
    }

    mutating func int(_ range: Range<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(max(1, range.count)))
    }

    mutating func chance(_ probability: Double) -> Bool {
        Double(next() % 1_000_000) / 1_000_000 < probability
    }
}
