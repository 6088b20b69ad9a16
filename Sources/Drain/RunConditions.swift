import Foundation

/// When a runner may use the network and the battery, so draining a library never runs up a
/// phone bill or flattens a laptop: on a metered network (a phone hotspot) or on battery it can wait, and large files can wait for an
/// unmetered network. The probes read the system (`/sys/class/power_supply`, NetworkManager's
/// metered flag, the default route) through paths and commands given as parameters, so tests pass
/// their own.
public struct RunConditions: Sendable, Equatable {
    /// Which networks uploads may use.
    public enum NetworkPolicy: String, Sendable, CaseIterable {
        case any, unmetered
    }

    /// What to do on battery.
    public enum BatteryPolicy: String, Sendable, CaseIterable {
        case allow, `defer`
    }

    public var network: NetworkPolicy = .any
    public var battery: BatteryPolicy = .allow
    /// On a metered network, files larger than this wait for an unmetered one.
    public var meteredFileLimit: Int64?

    public init(network: NetworkPolicy = .any, battery: BatteryPolicy = .allow, meteredFileLimit: Int64? = nil) {
        self.network = network
        self.battery = battery
        self.meteredFileLimit = meteredFileLimit
    }

    /// What a runner should do now.
    public enum Decision: Sendable, Equatable {
        /// Go on; uploads take files up to `maxUploadSize` (nil: any size). `notes` say what was
        /// assumed (an unknown network counted as unmetered).
        case go(maxUploadSize: Int64?, notes: [String])
        /// Wait: the reason, for the user and for `status`.
        case wait(reason: String)
    }

    /// The decision for a runner that uploads (`uploads`) or only analyses.
    public func decide(power: PowerProbe.Source, network: NetworkProbe.Finding, uploads: Bool) -> Decision {
        var notes: [String] = []
        if battery == .defer && power == .battery {
            return .wait(reason: "running on battery (--on-battery defer)")
        }
        guard uploads else { return .go(maxUploadSize: nil, notes: notes) }
        var metered = false
        switch network.cost {
        case .metered: metered = true
        case .unmetered: break
        case .unknown: notes.append("the network's cost is unknown (\(network.how)); counted as unmetered")
        }
        if metered && self.network == .unmetered {
            return .wait(reason: "the network is metered (\(network.how); --network unmetered)")
        }
        return .go(maxUploadSize: metered ? meteredFileLimit : nil, notes: notes)
    }

    /// A transfer in flight of a file up to this size may finish when the conditions turn against
    /// uploads; a larger one is cancelled (its job stays resumable from the server's offset).
    public static let smallTransfer: Int64 = 4 << 20

    /// What a runner that is already running does about the conditions now: the decision again,
    /// with what it means for the work in flight (`RunConditionMonitor` asks every few seconds).
    public enum Course: Sendable, Equatable {
        /// Start uploads of files up to `maxUploadSize` (nil: any size); one in flight of a larger
        /// file is cancelled (the metered file limit).
        case go(maxUploadSize: Int64?)
        /// Start no upload, and no analysis unless `analyses`; uploads in flight of files larger
        /// than `smallTransfer` are cancelled, smaller ones may finish.
        case wait(reason: String, analyses: Bool)

        public var startsUploads: Bool { if case .go = self { true } else { false } }
        public var startsAnalyses: Bool {
            switch self {
            case .go: true
            case .wait(_, let analyses): analyses
            }
        }
        public var maxUploadSize: Int64? { if case .go(let size) = self { size } else { nil } }
        public var reason: String? { if case .wait(let reason, _) = self { reason } else { nil } }

        /// Whether an upload in flight of a file of `size` bytes is cancelled now.
        public func cancels(uploadOfSize size: Int64) -> Bool {
            switch self {
            case .go(let limit): limit.map { size > $0 } ?? false
            case .wait: size > RunConditions.smallTransfer
            }
        }
    }

    /// The course for a runner that uploads, from the same readings as `decide`: on battery with
    /// `--on-battery defer` everything waits (analysis too, as `analyze` would); on a metered
    /// network with `--network unmetered` only uploads do.
    public func course(power: PowerProbe.Source, network: NetworkProbe.Finding) -> Course {
        switch decide(power: power, network: network, uploads: true) {
        case .go(let maxUploadSize, _): .go(maxUploadSize: maxUploadSize)
        case .wait(let reason): .wait(reason: reason, analyses: !(battery == .defer && power == .battery))
        }
    }
}

/// Whether the machine runs on mains power or on battery, from `/sys/class/power_supply`: on
/// battery when a battery is discharging and no mains supply is online.
public struct PowerProbe: Sendable {
    public enum Source: String, Sendable {
        case mains, battery, unknown
    }

    public let directory: String

    public init(directory: String = "/sys/class/power_supply") { self.directory = directory }

    public func read() -> Source {
        guard let supplies = try? FileManager.default.contentsOfDirectory(atPath: directory), !supplies.isEmpty else {
            return .unknown
        }
        var mainsOnline = false
        var discharging = false
        for supply in supplies {
            func value(_ name: String) -> String? {
                (try? String(contentsOfFile: "\(directory)/\(supply)/\(name)", encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
            switch value("type") {
            case "Mains", "USB": if value("online") == "1" { mainsOnline = true }
            case "Battery": if value("status") == "Discharging" { discharging = true }
            default: break
            }
        }
        if mainsOnline { return .mains }
        return discharging ? .battery : .mains
    }
}

/// Whether the network in use is metered: NetworkManager's flag for the default route's device
/// (`nmcli -t -g GENERAL.METERED device show DEV`) where it runs, else the kind of that device
/// (a mobile modem, `ww*`, `rmnet*`, or a tethered phone, `usb*`, counts as metered).
public struct NetworkProbe: Sendable {
    public enum Cost: String, Sendable {
        case metered, unmetered, unknown
    }

    /// The cost and how it was found, in words.
    public struct Finding: Sendable, Equatable {
        public var cost: Cost
        public var how: String
        public init(cost: Cost, how: String) {
            self.cost = cost
            self.how = how
        }
    }

    public let routeTable: String
    /// Asks NetworkManager about a device; nil when it does not run here.
    public let networkManager: @Sendable (String) -> String?

    public init(routeTable: String = "/proc/net/route", networkManager: @escaping @Sendable (String) -> String? = NetworkProbe.askNetworkManager) {
        self.routeTable = routeTable
        self.networkManager = networkManager
    }

    public func read() -> Finding {
        guard let device = defaultRouteDevice() else { return Finding(cost: .unknown, how: "no default route") }
        if let answer = networkManager(device)?.lowercased() {
            if answer.hasPrefix("yes") { return Finding(cost: .metered, how: "NetworkManager says \(device) is metered") }
            if answer.hasPrefix("no") { return Finding(cost: .unmetered, how: "NetworkManager says \(device) is not metered") }
        }
        if device.hasPrefix("ww") || device.hasPrefix("rmnet") || device.hasPrefix("usb") {
            return Finding(cost: .metered, how: "\(device) is a mobile or tethered link")
        }
        return Finding(cost: .unknown, how: "no NetworkManager to ask about \(device)")
    }

    /// The device of the default IPv4 route (`/proc/net/route`, destination 00000000).
    func defaultRouteDevice() -> String? {
        guard let table = try? String(contentsOfFile: routeTable, encoding: .utf8) else { return nil }
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
            if fields.count > 2, fields[1] == "00000000" { return String(fields[0]) }
        }
        return nil
    }

    /// `nmcli -t -g GENERAL.METERED device show DEVICE`, when nmcli is installed and answers.
    public static func askNetworkManager(_ device: String) -> String? {
        let candidates = ["/usr/bin/nmcli", "/bin/nmcli"]
        guard let nmcli = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        let process = Process()
        let pipe = Pipe()
        process.executableURL = URL(fileURLWithPath: nmcli)
        process.arguments = ["-t", "-g", "GENERAL.METERED", "device", "show", device]
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
