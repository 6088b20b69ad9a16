import Foundation
import Testing
@testable import Drain

/// The run conditions, decided from injected probes (no real battery or modem).
@Suite struct RunConditionsTests {
    static let metered = NetworkProbe.Finding(cost: .metered, how: "test")
    static let unmetered = NetworkProbe.Finding(cost: .unmetered, how: "test")
    static let unknown = NetworkProbe.Finding(cost: .unknown, how: "test")

    @Test func theDecisionTable() {
        let anyAllow = RunConditions()
        #expect(anyAllow.decide(power: .battery, network: Self.metered, uploads: true) == .go(maxUploadSize: nil, notes: []))
        let deferOnBattery = RunConditions(battery: .defer)
        #expect(deferOnBattery.decide(power: .battery, network: Self.unmetered, uploads: false) == .wait(reason: "running on battery (--on-battery defer)"))
        #expect(deferOnBattery.decide(power: .mains, network: Self.unmetered, uploads: true) == .go(maxUploadSize: nil, notes: []))
        let unmeteredOnly = RunConditions(network: .unmetered)
        #expect(unmeteredOnly.decide(power: .mains, network: Self.metered, uploads: true) == .wait(reason: "the network is metered (test; --network unmetered)"))
        // Analysis alone never waits for the network.
        #expect(unmeteredOnly.decide(power: .mains, network: Self.metered, uploads: false) == .go(maxUploadSize: nil, notes: []))
        // Unknown counts as unmetered, and says so.
        guard case .go(nil, let notes) = unmeteredOnly.decide(power: .mains, network: Self.unknown, uploads: true) else {
            Issue.record("an unknown network held uploads back")
            return
        }
        #expect(notes.first?.contains("counted as unmetered") == true)
        let limited = RunConditions(meteredFileLimit: 20_000_000)
        #expect(limited.decide(power: .mains, network: Self.metered, uploads: true) == .go(maxUploadSize: 20_000_000, notes: []))
        #expect(limited.decide(power: .mains, network: Self.unmetered, uploads: true) == .go(maxUploadSize: nil, notes: []))
    }

    private func supplies(_ entries: [String: [String: String]]) throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("power-\(UUID().uuidString)").path
        for (supply, files) in entries {
            try FileManager.default.createDirectory(atPath: root + "/" + supply, withIntermediateDirectories: true)
            for (name, value) in files { try Data((value + "\n").utf8).write(to: URL(fileURLWithPath: "\(root)/\(supply)/\(name)")) }
        }
        return root
    }

    @Test func powerComesFromSysClassPowerSupply() throws {
        let onBattery = try supplies(["BAT0": ["type": "Battery", "status": "Discharging"], "AC": ["type": "Mains", "online": "0"]])
        let charging = try supplies(["BAT0": ["type": "Battery", "status": "Charging"], "AC": ["type": "Mains", "online": "1"]])
        let desktop = try supplies([:])
        defer { for root in [onBattery, charging, desktop] { try? FileManager.default.removeItem(atPath: root) } }
        #expect(PowerProbe(directory: onBattery).read() == .battery)
        #expect(PowerProbe(directory: charging).read() == .mains)
        #expect(PowerProbe(directory: desktop).read() == .unknown)
        #expect(PowerProbe(directory: "/nonexistent").read() == .unknown)
    }

    @Test func networkCostComesFromNetworkManagerElseTheDevice() throws {
        let table = FileManager.default.temporaryDirectory.appendingPathComponent("route-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: table) }
        func route(_ device: String) throws {
            try Data("Iface\tDestination\tGateway\n\(device)\t000200C0\t00000000\n\(device)\t00000000\t010200C0\n".utf8)
                .write(to: URL(fileURLWithPath: table))
        }
        try route("wlan0")
        #expect(NetworkProbe(routeTable: table, networkManager: { _ in "yes (guessed)" }).read().cost == .metered)
        #expect(NetworkProbe(routeTable: table, networkManager: { _ in "no" }).read().cost == .unmetered)
        #expect(NetworkProbe(routeTable: table, networkManager: { _ in nil }).read().cost == .unknown)
        try route("wwan0")
        #expect(NetworkProbe(routeTable: table, networkManager: { _ in nil }).read().cost == .metered)
        #expect(NetworkProbe(routeTable: "/nonexistent", networkManager: { _ in "yes" }).read().cost == .unknown)
    }
}
