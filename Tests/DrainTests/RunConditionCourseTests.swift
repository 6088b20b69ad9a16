import Foundation
import Synchronization
import Testing
import Transfer
@testable import Drain

/// The run conditions re-checked while a runner runs: the course (go, wait, which uploads in
/// flight are cancelled) as a table, the monitor that keeps it and cancels, and what the drain's
/// schedule does with it. No clock: the probes' readings are set by the test and checked by hand.
@Suite struct RunConditionCourseTests {
    static let metered = NetworkProbe.Finding(cost: .metered, how: "test")
    static let unmetered = NetworkProbe.Finding(cost: .unmetered, how: "test")
    static let unknown = NetworkProbe.Finding(cost: .unknown, how: "test")
    static let small: Int64 = 200_000, large: Int64 = 50_000_000
    static let onBattery = "running on battery (--on-battery defer)"
    static let meteredWait = "the network is metered (test; --network unmetered)"

    /// Readings × configuration → the course, and whether a small and a large upload in flight
    /// are cancelled by it.
    @Test func theCourseTable() {
        let background = RunConditions(network: .unmetered, battery: .defer)
        let limited = RunConditions(meteredFileLimit: 20_000_000)
        let rows: [(RunConditions, PowerProbe.Source, NetworkProbe.Finding, RunConditions.Course, cancelsSmall: Bool, cancelsLarge: Bool)] = [
            // Any network, allowed on battery (the foreground default): always go.
            (RunConditions(), .battery, Self.metered, .go(maxUploadSize: nil), false, false),
            // Background manners: go on mains and an unmetered (or unknown) network...
            (background, .mains, Self.unmetered, .go(maxUploadSize: nil), false, false),
            (background, .unknown, Self.unknown, .go(maxUploadSize: nil), false, false),
            // ...wait on a metered one, analyses going on; large uploads in flight cancelled...
            (background, .mains, Self.metered, .wait(reason: Self.meteredWait, analyses: true), false, true),
            // ...and on battery everything waits, whatever the network.
            (background, .battery, Self.unmetered, .wait(reason: Self.onBattery, analyses: false), false, true),
            (background, .battery, Self.metered, .wait(reason: Self.onBattery, analyses: false), false, true),
            (RunConditions(battery: .defer), .battery, Self.metered, .wait(reason: Self.onBattery, analyses: false), false, true),
            (RunConditions(network: .unmetered), .battery, Self.unmetered, .go(maxUploadSize: nil), false, false),
            // A metered file limit: only files above it wait, and one in flight is cancelled.
            (limited, .mains, Self.metered, .go(maxUploadSize: 20_000_000), false, true),
            (limited, .mains, Self.unmetered, .go(maxUploadSize: nil), false, false),
        ]
        for (conditions, power, network, course, cancelsSmall, cancelsLarge) in rows {
            let got = conditions.course(power: power, network: network)
            #expect(got == course, "\(conditions) on \(power), \(network.cost)")
            #expect(got.cancels(uploadOfSize: Self.small) == cancelsSmall, "\(conditions) on \(power), \(network.cost)")
            #expect(got.cancels(uploadOfSize: Self.large) == cancelsLarge, "\(conditions) on \(power), \(network.cost)")
            #expect(got.startsUploads == (got.reason == nil))
        }
    }

    /// The monitor keeps the course of its last check and cancels the uploads in flight the new
    /// course cancels: the large one, not the small one; once cleared, uploads start again.
    @Test func theMonitorCancelsLargeUploadsInFlightWhenTheConditionsTurn() async throws {
        let readings = Readings()
        let monitor = RunConditionMonitor(conditions: RunConditions(network: .unmetered, battery: .defer)) { readings.now.withLock { $0 } }
        #expect(monitor.course == .go(maxUploadSize: nil))
        let started = StartedUploads()
        // An upload that runs until it is cancelled; it answers whether it was.
        func upload(size: Int64) -> Task<Bool, Never> {
            Task {
                await monitor.transfer(size: size) {
                    started.count.withLock { $0 += 1 }
                    while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
                    return true
                }
            }
        }
        let large = upload(size: Self.large), small = upload(size: Self.small)
        while started.count.withLock({ $0 }) < 2 { await Task.yield() }
        #expect(monitor.uploadsInFlight == 2)
        // Unchanged conditions cancel nothing.
        #expect(monitor.check() == .go(maxUploadSize: nil))
        readings.now.withLock { $0.network = Self.metered }
        #expect(monitor.check() == .wait(reason: Self.meteredWait, analyses: true))
        #expect(await large.value)
        #expect(monitor.course.startsUploads == false)
        // The small one may finish: the monitor leaves it alone.
        #expect(monitor.uploadsInFlight == 1)
        readings.now.withLock { $0.power = .battery }
        #expect(monitor.check() == .wait(reason: Self.onBattery, analyses: false))
        #expect(monitor.uploadsInFlight == 1)
        small.cancel()
        #expect(await small.value)
        // An upload of a large file asked for while they hold is cancelled at once.
        let late = upload(size: Self.large)
        #expect(await late.value)
        readings.now.withLock { $0 = RunConditionMonitor.Readings(power: .mains, network: Self.unmetered) }
        #expect(monitor.check() == .go(maxUploadSize: nil))
        #expect(monitor.course.startsUploads)
    }

    func schedule(slots: Int = 2, at t0: ContinuousClock.Instant) -> DrainSchedule {
        var options = DrainOptions(destination: UnavailableDestination(endpoint: "http://receiver.test/uploads",
                                                                       error: TransferError(.notFound, "not used")))
        options.slots = slots
        options.offlineGiveUp = .seconds(120)
        return DrainSchedule(options: options, serverWaitUntil: nil, watchLimited: nil, now: t0)
    }

    /// The drain's schedule under each course: which slot starts first with work of both kinds.
    @Test func theScheduleStartsOnlyWhatTheCourseAllows() {
        let t0 = ContinuousClock.now
        let work = DrainSchedule.Work(vision: 3, upload: 3)
        let rows: [(RunConditions.Course, DrainSchedule.Start?)] = [
            (.go(maxUploadSize: nil), .upload),
            (.wait(reason: Self.meteredWait, analyses: true), .analysis),
            (.wait(reason: Self.onBattery, analyses: false), nil),
        ]
        for (course, first) in rows {
            var s = schedule(at: t0)
            _ = s.conditions(course, at: t0)
            #expect(s.slotToStart(work: work, now: t0, date: Date()) == first, "\(course)")
        }
    }

    /// Held, with only held work left and nothing running, a drain that does not watch waits,
    /// then ends `waiting` after `offlineGiveUp`; cleared in time, it goes on.
    @Test func heldWorkIsWaitedForThenTheRunEndsWaiting() {
        let t0 = ContinuousClock.now
        let uploadsOnly = DrainSchedule.Work(vision: 0, upload: 2)
        var s = schedule(at: t0)
        guard case .conditions(let held)? = s.conditions(.wait(reason: Self.meteredWait, analyses: true), at: t0) else {
            Issue.record("no event for the conditions turning")
            return
        }
        #expect(held == Self.meteredWait)
        // Said once: the same course again is no news.
        #expect(s.conditions(.wait(reason: Self.meteredWait, analyses: true), at: t0 + .seconds(1)) == nil)
        #expect(s.slotToStart(work: uploadsOnly, now: t0, date: Date()) == nil)
        #expect(s.whenIdle(work: uploadsOnly, now: t0 + .seconds(119), date: Date()) == .wait(.milliseconds(200)))
        #expect(s.whenIdle(work: uploadsOnly, now: t0 + .seconds(120), date: Date()) == .finish(.waiting(reason: Self.meteredWait)))
        // Cleared before the give-up: uploads start again.
        var cleared = schedule(at: t0)
        _ = cleared.conditions(.wait(reason: Self.onBattery, analyses: false), at: t0)
        guard case .conditions(nil)? = cleared.conditions(.go(maxUploadSize: nil), at: t0 + .seconds(60)) else {
            Issue.record("no event for the conditions clearing")
            return
        }
        #expect(cleared.slotToStart(work: uploadsOnly, now: t0 + .seconds(60), date: Date()) == .upload)
    }
}

/// Uploads started so far, shared with the uploads' tasks.
final class StartedUploads: Sendable {
    let count = Mutex(0)
}

/// What the test's probes read, set by the test.
final class Readings: Sendable {
    let now = Mutex(RunConditionMonitor.Readings(power: .mains, network: RunConditionCourseTests.unmetered))
}
