import Foundation

// reliability-matrix: drives the built `photodrain` binary through the faults a real library meets
// (kills at random points, a receiver restarted, cut and stalled connections, a full disk, a
// memory cap) and writes the results table, the evidence behind RELIABILITY.md. Usage:
//   reliability-matrix --binary PATH --samples DIR [--quick] [--seed N] [--out FILE] [--only NAME] [--skip NAME] [--keep]

let usage = "usage: reliability-matrix --binary PATH --samples DIR [--quick] [--seed N] [--out FILE] [--only SUBSTRING] [--skip SUBSTRING] [--keep]"
var binary: String?
var samplesDirectory: String?
var quick = false
var seed: UInt64 = 7
var out: String?
var only: String?
var skip: [String] = []
var keep = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick": quick = true
    case "--keep": keep = true
    case "--binary": binary = arguments.popFirst()
    case "--samples": samplesDirectory = arguments.popFirst()
    case "--out": out = arguments.popFirst()
    case "--only": only = arguments.popFirst()
    case "--skip": if let name = arguments.popFirst() { skip.append(name) }
    case "--seed":
        guard let text = arguments.popFirst(), let value = UInt64(text) else {
            FileHandle.standardError.write(Data("--seed needs a non-negative integer\n\(usage)\n".utf8))
            exit(64)
        }
        seed = value
    default:
        FileHandle.standardError.write(Data("unknown argument \(argument)\n\(usage)\n".utf8))
        exit(64)
    }
}
guard let binary, let samplesDirectory else {
    FileHandle.standardError.write(Data("\(usage)\n".utf8))
    exit(64)
}

let workRoot = FileManager.default.temporaryDirectory.appendingPathComponent("pd-reliability-\(getpid())").path
do {
    try FileManager.default.createDirectory(atPath: workRoot, withIntermediateDirectories: true)
    let context = MatrixContext(binary: binary, samples: try Sample.load(from: samplesDirectory), seed: seed,
                                quick: quick, workRoot: workRoot, keep: keep)
    let scenarios: [(String, (MatrixContext) throws -> ScenarioResult)] = [
        ("SIGKILL analyze", KillScenarios.analyze),
        ("SIGKILL drain", KillScenarios.drain),
        ("SIGKILL wake", KillScenarios.wake),
        ("SIGKILL agent", KillScenarios.agent),
        ("receiver killed and restarted", KillScenarios.receiver),
        ("proxy faults: create", { try NetworkScenarios.run(.create, $0) }),
        ("proxy faults: append", { try NetworkScenarios.run(.append, $0) }),
        ("proxy faults: final response", { try NetworkScenarios.run(.finalResponse, $0) }),
        ("captive portal", LyingServerScenarios.run),
        ("source modified mid-upload", { try SourceChangeScenarios.run(removing: false, $0) }),
        ("source removed mid-upload", { try SourceChangeScenarios.run(removing: true, $0) }),
        ("receiver disk full", ResourceScenarios.diskFull),
        ("bit flipped on the receiver's disk", IntegrityScenarios.bitFlip),
        ("memory-capped wake", ResourceScenarios.memoryCappedWake),
        ("byte-flipping proxy in front of S3", S3Scenarios.byteFlippingProxy),
        ("three serve --store instances, one SIGKILLed at random", FleetScenarios.killedInstances),
        ("SIGKILL free-space and restore", FreeSpaceScenarios.killed),
    ]
    let started = Date()
    var results: [ScenarioResult] = []
    for (name, scenario) in scenarios where (only.map({ name.contains($0) }) ?? true) && !skip.contains(where: { name.contains($0) }) {
        let scenarioStart = Date()
        var result: ScenarioResult
        do {
            result = try scenario(context)
        } catch {
            result = ScenarioResult(name: name)
            result.failures.append("the scenario could not run: \(error)")
        }
        results.append(result)
        let ratio = result.resentRatio.map { String(format: "%.3f", $0) } ?? "n/a"
        print("\(result.passed ? "pass" : "FAIL")  \(name): runs \(result.runs), photos \(result.photos), faults \(result.faults), "
              + "lost \(result.lost), duplicates \(result.duplicates), corrupted \(result.corrupted), re-sent \(ratio) "
              + "(\(Int(Date().timeIntervalSince(scenarioStart))) s)")
        for failure in result.failures { print("      \(failure)") }
        // One line per scenario as it finishes, even when stdout is a file or a pipe.
        fflush(nil)
    }
    let section = Report.table(results, seed: seed, quick: quick, seconds: Date().timeIntervalSince(started))
    if let out { try Report.write(section, to: out) }
    if !keep { try? FileManager.default.removeItem(atPath: workRoot) }
    let failed = results.filter { !$0.passed }.count
    // The last line is plain 'N passed, N failed' (scenarios), as Scripts/test's output ends.
    print("reliability matrix, seed \(seed)\(quick ? ", quick" : ""):")
    print("\(results.count - failed) passed, \(failed) failed")
    exit(failed == 0 ? 0 : 1)
} catch {
    FileHandle.standardError.write(Data("reliability-matrix: \(error)\n".utf8))
    exit(1)
}
