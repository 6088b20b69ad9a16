import AssetStore
import CProcess
import Drain
import Foundation
import SystemSupport

/// The run-condition options of the runners (`--network`, `--on-battery`, `--metered-file-limit`,
/// `--priority`) and what they decide before a run starts.
enum RunConditionOptions {
    static let network = OptionSpec.option("network", "any|unmetered", "Upload on any network, or only on one that is not metered (NetworkManager's flag, else the default route's device; unknown counts as unmetered and says so). Checked again every 3 s while agent and drain run: no upload starts on a metered network, and those of files over 4 MiB in flight go back to resume later.", default: "any")
    static let onBattery = OptionSpec.option("on-battery", "allow|defer", "On battery power, run anyway or wait (exit 75, nothing charged; agent and drain, already running, pause until mains power is back).", default: "allow")
    static let meteredFileLimit = OptionSpec.option("metered-file-limit", "SIZE", "On a metered network, files larger than this (e.g. 20M) wait for an unmetered one.")
    static let priority = OptionSpec.option("priority", "normal|idle", "CPU and I/O priority: idle never makes the person at the machine wait.", default: "idle under systemd (a timer or a service), else normal")
    /// For runners that upload.
    static let uploading = [network, onBattery, meteredFileLimit, priority]
    /// For `analyze`.
    static let analysing = [onBattery, priority]

    /// The conditions the options ask for. Usage error for a bad value.
    static func conditions(_ arguments: ParsedArguments) throws(UsageError) -> RunConditions {
        var conditions = RunConditions()
        if let text = arguments.string("network") {
            guard let value = RunConditions.NetworkPolicy(rawValue: text) else {
                throw UsageError("--network wants any or unmetered, not '\(text)'", command: arguments.command)
            }
            conditions.network = value
        }
        if let text = arguments.string("on-battery") {
            guard let value = RunConditions.BatteryPolicy(rawValue: text) else {
                throw UsageError("--on-battery wants allow or defer, not '\(text)'", command: arguments.command)
            }
            conditions.battery = value
        }
        if arguments.string("metered-file-limit") != nil {
            conditions.meteredFileLimit = try arguments.bytes("metered-file-limit").map(Int64.init)
        }
        return conditions
    }

    /// Checks the conditions before a run: the decision, with what was assumed said on standard
    /// error. A wait is recorded in the store (`status` shows it).
    static func decide(_ arguments: ParsedArguments, store: AssetStore, uploads: Bool) throws -> RunConditions.Decision {
        let conditions = try conditions(arguments)
        let now = readings(conditions, uploads: uploads)
        let decision = conditions.decide(power: now.power, network: now.network, uploads: uploads)
        switch decision {
        case .go(_, let notes):
            for note in notes { Console.shared.err("photodrain \(arguments.command): \(note)") }
        case .wait(let reason):
            try store.recordDeferral(reason)
            Console.shared.err("photodrain \(arguments.command): waiting: \(reason); nothing was charged. Run again later (exit 75).")
        }
        return decision
    }

    /// After a wait, checks again every second for up to `limit` (a bounded run's runtime limit)
    /// or until a signal: the decision once the conditions clear, else the wait.
    static func waitToClear(_ arguments: ParsedArguments, upTo limit: Duration, signals: EarlySignals) async -> RunConditions.Decision {
        guard let conditions = try? conditions(arguments) else { return .wait(reason: "bad options") }
        let stopped = OneShotLatch<Int32>()
        signals.attach { stopped.complete($0) }
        let deadline = ContinuousClock.now + limit
        var decision = RunConditions.Decision.wait(reason: "")
        while ContinuousClock.now < deadline && !stopped.isCompleted {
            try? await Task.sleep(for: min(.seconds(1), deadline - .now))
            let now = await onOwnThreadUntilDone("photodrain-conditions") { readings(conditions, uploads: true) }
            decision = conditions.decide(power: now.power, network: now.network, uploads: true)
            if case .go = decision {
                Console.shared.err("photodrain \(arguments.command): the run conditions allow it now; going on")
                return decision
            }
        }
        return decision
    }

    /// The monitor that re-checks the conditions while an uploading runner runs (`agent`,
    /// `drain`); nil when the options ask for none (any network, allowed on battery).
    static func monitor(_ arguments: ParsedArguments) throws(UsageError) -> RunConditionMonitor? {
        let conditions = try conditions(arguments)
        guard conditions.network == .unmetered || conditions.battery == .defer || conditions.meteredFileLimit != nil else { return nil }
        return RunConditionMonitor(conditions: conditions) { readings(conditions, uploads: true) }
    }

    /// What the probes say now: the system, or what `PHOTODRAIN_POWER_SUPPLY_DIR` (a folder laid
    /// out as /sys/class/power_supply) and `PHOTODRAIN_NETWORK_METERED` (yes, no, or the path of a
    /// file saying yes or no, read at every check) say, which tests set. The network is asked only
    /// when the conditions care about it.
    static func readings(_ conditions: RunConditions, uploads: Bool) -> RunConditionMonitor.Readings {
        let environment = ProcessInfo.processInfo.environment
        let power = PowerProbe(directory: environment["PHOTODRAIN_POWER_SUPPLY_DIR"] ?? "/sys/class/power_supply").read()
        var hint = environment["PHOTODRAIN_NETWORK_METERED"]
        if let path = hint, path.hasPrefix("/") {
            hint = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let network: NetworkProbe.Finding
        switch hint {
        case "yes": network = .init(cost: .metered, how: "PHOTODRAIN_NETWORK_METERED=yes")
        case "no": network = .init(cost: .unmetered, how: "PHOTODRAIN_NETWORK_METERED=no")
        default: network = uploads && (conditions.network == .unmetered || conditions.meteredFileLimit != nil)
            ? NetworkProbe().read() : .init(cost: .unmetered, how: "not asked")
        }
        return .init(power: power, network: network)
    }

    /// Lowers this process to idle CPU and I/O priority when `--priority idle`, or by default when
    /// systemd started it (`INVOCATION_ID`). Call before any thread starts.
    static func applyPriority(_ arguments: ParsedArguments) throws(UsageError) {
        let text = arguments.string("priority") ?? (ProcessInfo.processInfo.environment["INVOCATION_ID"] != nil ? "idle" : "normal")
        switch text {
        case "normal": return
        case "idle":
            let failure = pd_process_set_idle_priority()
            if failure != 0 {
                Console.shared.err("photodrain \(arguments.command): could not lower the priority (\(String(cString: strerror(failure)))); running at normal priority")
            }
        default:
            throw UsageError("--priority wants normal or idle, not '\(text)'", command: arguments.command)
        }
    }
}
