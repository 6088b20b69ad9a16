import FaultProxy
import Synchronization
import Foundation

/// FaultProxy faults in front of `photodrain serve`, aimed at the three parts of an upload:
/// the creation request, the appends, and the final response.
enum NetworkScenarios {
    /// Which part of the exchange the faults aim at.
    enum Phase: String, CaseIterable {
        case create, append, finalResponse = "final response"
    }

    /// A plan that faults a seeded share of the first `budget` connections, then lets the rest
    /// through (so every run finishes), reproducibly from `seed`.
    static func plan(_ phase: Phase, seed: UInt64, budget: Int) -> FaultPlan {
        FaultPlan { index in
            guard index < budget else { return nil }
            var random = SeededRandom(seed: seed &+ UInt64(index) &* 0x2545_F491_4F6C_DD1D)
            switch phase {
            case .create:
                // Small photos go whole in the creation POST: cut it anywhere in its first 160 KB,
                // reset the connection, or answer 503.
                guard random.chance(0.7) else { return nil }
                switch random.int(0..<4) {
                case 0: return .reset
                case 1: return .serviceUnavailable
                default: return .cut(afterBytes: random.int(0..<160_000), direction: .upstream)
                }
            case .append:
                // Large photos are created empty, then appended: cut or stall inside the append.
                guard random.chance(0.7) else { return nil }
                if random.chance(0.25) {
                    return .stall(afterBytes: random.int(1_000..<(5 << 20)), direction: .upstream, milliseconds: 300)
                }
                return .cut(afterBytes: random.int(1_000..<(6 << 20)), direction: .upstream)
            case .finalResponse:
                // The request arrived whole; its response (104 and 201 heads) is cut short.
                guard random.chance(0.7) else { return nil }
                return .cut(afterBytes: random.int(0..<600), direction: .downstream)
            }
        }
    }

    static func run(_ phase: Phase, _ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated("proxy faults: \(phase.rawValue)", context) { run, random, result in
            let plan = plan(phase, seed: random.next(), budget: context.quick ? 30 : 60)
            let rig = try Rig(context: context, name: "proxy-\(phase)-\(run)".replacingOccurrences(of: " ", with: "-"), plan: plan)
            var photos = context.photos
            if phase == .append {
                photos = context.quick ? 3 : 5
                try rig.library.addPhotos(photos, samples: context.samples, padding: 5 << 20, prefix: "large", random: &random)
            } else {
                try rig.library.addPhotos(photos, samples: context.samples, random: &random)
            }
            try rig.drainUntilDone(runs: 12, extra: ["--max-attempts", "10"], into: &result)
            result.faults += rig.proxy.injectedFaults.count
            rig.conclude(&result, photos: photos)
        }
    }
}

/// A photo changed or removed on disk while its upload is in flight: the upload must be cancelled
/// or redone, and the receiver must never keep an object whose bytes are not what it claims.
enum SourceChangeScenarios {
    static func run(removing: Bool, _ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated(removing ? "source removed mid-upload" : "source modified mid-upload", context) { run, random, result in
            // A slow link: the large photo's upload takes a few seconds.
            let rig = try Rig(context: context, name: "source-\(removing ? "removed" : "modified")-\(run)",
                              plan: FaultPlan { _ in .delay(milliseconds: 15) })
            try rig.library.addPhotos(2, samples: context.samples, random: &random)
            try rig.library.addPhotos(1, samples: context.samples, padding: 6 << 20, prefix: "large", random: &random)
            let target = "large-000.jpg"
            let drain = try rig.tool.start(rig.drainArguments(), name: "drain")
            // Wait until some of the large photo's bytes are on the wire, then change it.
            let threshold = random.int(300_000..<(4 << 20))
            let deadline = Date().addingTimeInterval(90)
            while rig.proxy.bytesForwarded(.upstream) < threshold && drain.isRunning && Date() < deadline { usleep(10_000) }
            if !drain.isRunning { result.notes.append("run \(run): drain ended before the change") }
            if removing {
                try rig.library.remove(target)
            } else {
                try rig.library.modifyInPlace(target, random: &random)
            }
            result.faults += 1
            drain.wait(seconds: 240)
            try rig.drainUntilDone(into: &result)
            let digestRefusals = rig.serve.log.split(separator: "\n").filter { $0.contains("digest mismatch") }.count
            if digestRefusals > 0 { result.notes.append("run \(run): receiver refused \(digestRefusals) mismatched upload(s) (400)") }
            rig.conclude(&result, photos: 3)
        }
    }
}

/// A captive portal (or any server that answers 200 and stores nothing) stands where the receiver
/// should be: no photo may be marked uploaded while it answers. Once the real receiver is
/// reachable, everything is uploaded and `verify` finds every photo there.
enum LyingServerScenarios {
    static func run(_ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated("captive portal", context) { run, random, result in
            let portal = FaultSwitch()
            let rig = try Rig(context: context, name: "captive-portal-\(run)", plan: FaultPlan { _ in portal.isOn ? .captivePortal : nil })
            try rig.library.addPhotos(context.photos, samples: context.samples, random: &random)
            for attempt in 0..<2 {
                let (status, child) = try rig.tool.run(rig.drainArguments(), name: "drain", seconds: 240)
                result.faults += 1
                if status == 0 { result.failures.append("drain \(attempt) behind the portal exited 0") }
                if !child.stderr.contains("captive portal") {
                    result.failures.append("drain \(attempt) behind the portal did not name the likely cause: \(child.stderr.suffix(300))")
                }
            }
            let (_, status) = try rig.tool.run(["status", rig.library.folder, "--store", rig.library.store, "--json"], name: "status", seconds: 60)
            if let counts = (try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any] {
                let uploaded = counts["uploaded"] as? Int ?? -1
                let failed = counts["failed"] as? Int ?? -1
                if uploaded != 0 || failed != 0 {
                    result.failures.append("behind the portal: \(uploaded) photos marked uploaded and \(failed) failed (want 0 and 0)")
                }
            } else {
                result.failures.append("status --json could not be read")
            }
            portal.turnOff()
            try rig.drainUntilDone(into: &result)
            let (verified, verify) = try rig.tool.run(["verify", rig.library.folder, "--store", rig.library.store] + rig.tokenArguments, name: "verify", seconds: 120)
            if verified != 0 { result.failures.append("verify after the real receiver came back exited \(verified): \(verify.stdout.suffix(300))") }
            rig.conclude(&result, photos: context.photos)
        }
    }
}

/// Shared between a proxy's plan and its scenario: whether the fault is on (it starts on; the
/// scenario turns it off to see everything recover).
final class FaultSwitch: Sendable {
    private let on = Mutex(true)
    var isOn: Bool { on.withLock { $0 } }
    func turnOff() { on.withLock { $0 = false } }
}
