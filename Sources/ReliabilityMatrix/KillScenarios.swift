import FaultProxy
import Foundation

/// SIGKILL of each runner at seeded random points, and of the receiver; every run ends with the
/// library drained and audited.
enum KillScenarios {
    /// `analyze` killed `kills` times, then run to its end, then drained.
    static func analyze(_ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated("SIGKILL analyze", context) { run, random, result in
            let rig = try Rig(context: context, name: "kill-analyze-\(run)")
            try rig.library.addPhotos(context.photos, samples: context.samples, random: &random)
            let arguments = ["analyze", rig.library.folder, "--store", rig.library.store] + Rig.analysis
            try rig.killRepeatedly(arguments, name: "analyze", times: context.kills, window: (0.1, 1.5), random: &random, into: &result)
            var status: Int32 = -1
            for _ in 0..<5 where status != 0 {
                status = try rig.tool.run(arguments, name: "analyze").status
            }
            if status != 0 { result.failures.append("analyze never exited 0 (last \(status))") }
            try rig.drainUntilDone(into: &result)
            rig.conclude(&result, photos: context.photos)
        }
    }

    /// `drain` killed `kills` times mid-run, then rerun until it exits 0.
    static func drain(_ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated("SIGKILL drain", context) { run, random, result in
            let rig = try Rig(context: context, name: "kill-drain-\(run)")
            try rig.library.addPhotos(context.photos, samples: context.samples, random: &random)
            try rig.killRepeatedly(rig.drainArguments(), name: "drain", times: context.kills, window: (0.1, 2.0), random: &random, into: &result)
            try rig.drainUntilDone(into: &result)
            rig.conclude(&result, photos: context.photos)
        }
    }

    /// `wake` killed at random points while an `agent` performs the jobs; wake is invoked again
    /// (as the system would) until it reports everything completed.
    static func wake(_ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated("SIGKILL wake", context) { run, random, result in
            let rig = try Rig(context: context, name: "kill-wake-\(run)")
            try rig.library.addPhotos(context.photos, samples: context.samples, random: &random)
            let agent = try rig.tool.start(["agent", rig.library.folder, "--store", rig.library.store, "--slots", "2"] + rig.tokenArguments, name: "agent")
            let arguments = ["wake", rig.library.folder, "--store", rig.library.store, "--to", rig.url,
                             "--inflight-limit", "5", "--page-size", "4"] + Rig.analysis
            var kills = 0
            var statuses: [Int32] = []
            for _ in 0..<80 {
                let child = try rig.tool.start(arguments, name: "wake")
                if kills < context.kills {
                    usleep(random.micros(0.05, 1.0))
                    if child.signal(SIGKILL) { result.faults += 1 }
                    kills += 1
                }
                let status = child.wait(seconds: 120)
                statuses.append(status)
                if status == 0 { break }
                usleep(300_000)
            }
            agent.signal(SIGTERM)
            agent.wait(seconds: 30)
            if statuses.last != 0 { result.failures.append("wake never exited 0 (\(statuses.count) invocations)") }
            result.notes.append("wake run \(run): \(statuses.count) invocations")
            rig.conclude(&result, photos: context.photos)
        }
    }

    /// `agent` killed mid-upload (a slow link, so the kills land inside transfers); `wake` runs
    /// between agents; a last agent runs until idle.
    static func agent(_ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated("SIGKILL agent", context) { run, random, result in
            let rig = try Rig(context: context, name: "kill-agent-\(run)", plan: FaultPlan { _ in .delay(milliseconds: 10) })
            let photos = context.quick ? 4 : 8
            // About 1 MiB each: a transfer takes long enough over the slow link to be interrupted.
            try rig.library.addPhotos(photos, samples: context.samples, padding: 1 << 20, random: &random)
            let wake = ["wake", rig.library.folder, "--store", rig.library.store, "--to", rig.url] + Rig.analysis
            let agent = ["agent", rig.library.folder, "--store", rig.library.store, "--slots", "2"] + rig.tokenArguments
            var kills = 0
            var last: Int32 = -1
            for _ in 0..<60 {
                last = try rig.tool.run(wake, name: "wake", seconds: 120).status
                if last == 0 { break }
                if kills < context.kills {
                    try rig.killRepeatedly(agent, name: "agent", times: 1, window: (0.3, 1.5), random: &random, into: &result)
                    kills += 1
                } else {
                    try rig.tool.run(agent + ["--exit-when-idle", "1"], name: "agent", seconds: 240)
                }
            }
            if last != 0 { result.failures.append("wake never exited 0") }
            rig.conclude(&result, photos: photos)
        }
    }

    /// The receiver SIGKILLed and restarted (same directory, same port) while `drain` runs.
    static func receiver(_ context: MatrixContext) throws -> ScenarioResult {
        try ScenarioResult.repeated("receiver killed and restarted", context) { run, random, result in
            let rig = try Rig(context: context, name: "kill-receiver-\(run)")
            // Some large photos too, so a kill can land inside an append.
            try rig.library.addPhotos(context.photos, samples: context.samples, random: &random)
            try rig.library.addPhotos(2, samples: context.samples, padding: 5 << 20, prefix: "large", random: &random)
            let drain = try rig.tool.start(rig.drainArguments(), name: "drain")
            for _ in 0..<context.kills {
                usleep(random.micros(0.2, 1.5))
                rig.serve.kill()
                result.faults += 1
                usleep(random.micros(0.1, 1.0))
                try rig.serve.start()
            }
            drain.wait(seconds: 240)
            try rig.drainUntilDone(into: &result)
            rig.conclude(&result, photos: context.photos + 2)
        }
    }
}
