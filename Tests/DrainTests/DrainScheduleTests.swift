import AssetStore
import Foundation
import Testing
import Transfer
@testable import Drain

/// The drain loop's decisions, without a store, a network or a clock: each test drives a
/// `DrainSchedule` through instants it chooses.
@Suite struct DrainScheduleTests {
    static let endpoint = "http://receiver.test/uploads"
    let t0 = ContinuousClock.now

    func options(_ change: (inout DrainOptions) -> Void = { _ in }) -> DrainOptions {
        var options = DrainOptions(destination: UnavailableDestination(endpoint: Self.endpoint,
                                                                       error: TransferError(.notFound, "not used")))
        change(&options)
        return options
    }

    func schedule(_ change: (inout DrainOptions) -> Void = { _ in }, serverWait: Date? = nil) -> DrainSchedule {
        DrainSchedule(options: options(change), serverWaitUntil: serverWait, watchLimited: nil, now: t0)
    }

    /// A photo's row as the store would hand it out (only its identity matters here).
    func asset(_ id: Int64) throws -> AssetRecord {
        let json = #"{"id":\#(id),"path":"p\#(id).jpg","size":1,"mtimeNanoseconds":0,"generation":0,"discoveredAt":0,"attempts":0,"failed":false}"#
        return try JSONDecoder().decode(AssetRecord.self, from: Data(json.utf8))
    }

    @Test func uploadFirstFillsEverySlotWithUploadsThenStops() {
        var s = schedule()
        let work = DrainSchedule.Work(vision: 5, upload: 5)
        let got1 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got1 == .upload)
        let got2 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got2 == .upload)
        let got3 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got3 == .upload)
        let got4 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got4 == nil)
        #expect(s.running == [.upload, .upload, .upload])
    }

    @Test func offlineItSaysSoOnceAndAnalysesMeanwhile() {
        var s = schedule { $0.slots = 1 }
        let work = DrainSchedule.Work(vision: 2, upload: 2)
        let got5 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got5 == .upload)
        let got6 = s.record(.offline("connection refused"), now: t0)
        #expect(got6 == .wentOffline(message: "connection refused"))
        let got7 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got7 == .analysis)
        let got8 = s.record(.offline("again"), now: t0)
        #expect(got8 == .carryOn)
        let got9 = s.slotToStart(work: DrainSchedule.Work(vision: 0, upload: 2), now: t0, date: Date())
        #expect(got9 == nil)
    }

    @Test func probesBackOffDoublingToTheCeilingAndResetWhenBack() {
        var s = schedule { $0.probeInterval = .seconds(1); $0.maxProbeInterval = .seconds(4) }
        _ = s.slotToStart(work: DrainSchedule.Work(vision: 0, upload: 1), now: t0, date: Date())
        _ = s.record(.offline("down"), now: t0)
        #expect(!s.probeDue(now: t0))
        #expect(s.probeDue(now: t0 + .seconds(1)))
        var intervals: [Duration] = []
        for _ in 0..<4 {
            let got10 = s.probed(reachable: false, now: t0)
            #expect(!got10)
            intervals.append(s.probeInterval)
        }
        #expect(intervals == [.seconds(2), .seconds(4), .seconds(4), .seconds(4)])
        let got11 = s.probed(reachable: true, now: t0)
        #expect(got11)
        #expect(s.online && s.probeInterval == .seconds(1) && !s.probeDue(now: t0 + .seconds(60)))
    }

    @Test func countedFailuresInARowPauseUploadsLongerAndASuccessEndsTheStreak() {
        var s = schedule { $0.slots = 1; $0.retryBackoff = .seconds(1); $0.maxRetryBackoff = .seconds(30) }
        let work = DrainSchedule.Work(vision: 0, upload: 3)
        let got12 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got12 == .upload)
        _ = s.record(.uploadCharged, now: t0)
        let got13 = s.slotToStart(work: work, now: t0 + .milliseconds(999), date: Date())
        #expect(got13 == nil)
        let got14 = s.slotToStart(work: work, now: t0 + .seconds(1), date: Date())
        #expect(got14 == .upload)
        _ = s.record(.uploadCharged, now: t0 + .seconds(1))
        #expect(s.uploadsPausedUntil == t0 + .seconds(3))
        let got15 = s.slotToStart(work: work, now: t0 + .seconds(3), date: Date())
        #expect(got15 == .upload)
        _ = s.record(.worked(.upload), now: t0 + .seconds(3))
        #expect(s.failuresInARow == 0)
    }

    @Test func backoffDoublesFromItsBaseUpToItsCeiling() {
        let pauses = (0...7).map { DrainSchedule.backoff(after: $0, base: .seconds(1), ceiling: .seconds(30)) }
        #expect(pauses == [.zero, .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30), .seconds(30)])
    }

    @Test func aPhotoTooBigForASlotIsAnalysedAloneOnceTheOthersAreDone() throws {
        var s = schedule()
        let work = DrainSchedule.Work(vision: 5, upload: 0)
        let got16 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got16 == .analysis)
        let got17 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got17 == .analysis)
        let big = try asset(7)
        let got18 = s.record(.needsAlone(big), now: t0)
        #expect(got18 == .carryOn)
        // One analysis still runs: nothing starts, neither the big photo nor another analysis.
        let got19 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got19 == nil)
        _ = s.record(.worked(.analysis), now: t0)
        let got20 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got20 == .alone(big))
        // Nothing analyses beside it.
        let got21 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got21 == nil)
        _ = s.record(.worked(.analysisAlone), now: t0)
        let got22 = s.slotToStart(work: work, now: t0, date: Date())
        #expect(got22 == .analysis)
    }

    @Test func aRefusalOrAStoreFailureEndsTheRun() {
        var s = schedule()
        _ = s.slotToStart(work: DrainSchedule.Work(vision: 0, upload: 1), now: t0, date: Date())
        let got23 = s.record(.refused("unauthorized: 401"), now: t0)
        #expect(got23 == .end(.refused(message: "unauthorized: 401")))
        let got24 = s.record(.storeFailed("disk I/O error"), now: t0)
        #expect(got24 == .end(.failed(message: "disk I/O error")))
    }

    @Test func aServersShortRetryAfterIsWaitedOutAndALongOneEndsTheRun() {
        let now = Date()
        var short = schedule({ $0.retryAfterLimit = .seconds(60) }, serverWait: now.addingTimeInterval(5))
        let uploads = DrainSchedule.Work(vision: 0, upload: 1)
        let got25 = short.slotToStart(work: uploads, now: t0, date: now)
        #expect(got25 == nil)
        let got26 = short.whenIdle(work: uploads, now: t0, date: now)
        #expect(got26 == .wait(.milliseconds(200)))
        let got27 = short.slotToStart(work: uploads, now: t0, date: now.addingTimeInterval(6))
        #expect(got27 == .upload)

        let until = now.addingTimeInterval(3600)
        var long = schedule({ $0.retryAfterLimit = .seconds(60) }, serverWait: until)
        let got28 = long.whenIdle(work: uploads, now: t0, date: now)
        #expect(got28 == .finish(.retryLater(until: until)))
    }

    @Test func offlineWithOnlyUploadsLeftItGivesUpAfterTheOfflineTimeout() {
        var s = schedule { $0.slots = 1; $0.offlineGiveUp = .seconds(120) }
        let uploads = DrainSchedule.Work(vision: 0, upload: 4)
        _ = s.slotToStart(work: uploads, now: t0, date: Date())
        _ = s.record(.offline("down"), now: t0)
        let got29 = s.whenIdle(work: uploads, now: t0 + .seconds(119), date: Date())
        #expect(got29 == .wait(.milliseconds(200)))
        let got30 = s.whenIdle(work: uploads, now: t0 + .seconds(120), date: Date())
        #expect(got30
            == .finish(.offline(message: "\(Self.endpoint) has been unreachable for 120 s (--offline-timeout)")))
    }

    @Test func photosHeldByAnotherRunnerEndTheRunOnceNothingElseIsLeft() {
        var s = schedule { $0.slots = 1 }
        let held = DrainSchedule.Work(vision: 3, upload: 0)
        let got31 = s.slotToStart(work: held, now: t0, date: Date())
        #expect(got31 == .analysis)
        _ = s.record(.noWork(.analysis), now: t0)
        let got32 = s.whenIdle(work: held, now: t0, date: Date())
        #expect(got32 == .finish(.finished))
    }

    @Test func filesStillBeingWrittenAreWaitedForUpToTheSettleLimit() {
        var s = schedule { $0.quietPeriod = .seconds(2); $0.settleLimit = .seconds(60) }
        #expect(!s.finishesWithoutLooking)
        let got33 = s.lastScan(newWork: false, settling: ["a.jpg"], now: t0)
        #expect(got33 == .wait(.milliseconds(500)))
        let got34 = s.lastScan(newWork: false, settling: ["a.jpg"], now: t0 + .seconds(59))
        #expect(got34 == .wait(.milliseconds(500)))
        let got35 = s.lastScan(newWork: false, settling: ["a.jpg"], now: t0 + .seconds(60))
        #expect(got35 == .finish(.stillChanging(paths: ["a.jpg"])))
        let got36 = s.lastScan(newWork: true, settling: [], now: t0 + .seconds(61))
        #expect(got36 == nil)
        let got37 = s.lastScan(newWork: false, settling: [], now: t0 + .seconds(62))
        #expect(got37 == .finish(.finished))
        #expect(schedule { $0.rescanInterval = nil }.finishesWithoutLooking)
    }

    @Test func rescansComeEveryIntervalAndWatchedChangesInBatches() {
        var s = schedule { $0.rescanInterval = .seconds(10) }
        let got38 = s.scanDue(now: t0 + .seconds(9), hasWatcher: false)
        #expect(got38 == nil)
        let got39 = s.scanDue(now: t0 + .seconds(10), hasWatcher: false)
        #expect(got39 == DrainSchedule.Scan())
        let got40 = s.scanDue(now: t0 + .seconds(11), hasWatcher: false)
        #expect(got40 == nil)

        var w = schedule { $0.watch = true; $0.rescanInterval = nil; $0.watchBatchDelay = .milliseconds(500) }
        var changes = LibraryChanges()
        changes.folders = [Array("2024".utf8)]
        let got41 = w.watched(changes, limitReached: nil, now: t0)
        #expect(got41.isEmpty)
        let got42 = w.scanDue(now: t0, hasWatcher: true)
        #expect(got42 == DrainSchedule.Scan(folders: [Array("2024".utf8)], full: false, batch: 1))
        changes.folders = [Array("2025".utf8)]
        _ = w.watched(changes, limitReached: nil, now: t0)
        let got43 = w.scanDue(now: t0 + .milliseconds(499), hasWatcher: true)
        #expect(got43 == nil)
        let got44 = w.scanDue(now: t0 + .milliseconds(500), hasWatcher: true)
        #expect(got44?.batch == 1)
    }

    @Test func watchingALibraryThatGoesAwayIsSaidOnceAndNotScanned() {
        var s = schedule { $0.watch = true; $0.rescanInterval = .seconds(10) }
        var away = LibraryChanges()
        away.wentAway = true
        let said = s.watched(away, limitReached: nil, now: t0)
        #expect(said.count == 1 && s.libraryAway)
        let got45 = s.scanDue(now: t0 + .seconds(60), hasWatcher: true)
        #expect(got45 == nil)
        let got46 = s.slotToStart(work: DrainSchedule.Work(vision: 3, upload: 3), now: t0, date: Date())
        #expect(got46 == nil)
        let got47 = s.watchWake(work: DrainSchedule.Work(vision: 3, upload: 3), hasWatcher: true, now: t0, date: Date())
        #expect(got47.at == nil)
    }

    @Test func aWatchLimitTurnsTheRescansOn() {
        var s = schedule { $0.watch = true; $0.rescanInterval = nil }
        let got48 = s.scanDue(now: t0 + .seconds(3600), hasWatcher: true)
        #expect(got48 == nil)
        _ = s.watched(LibraryChanges(), limitReached: "the watch limit (8192 folders) was reached", now: t0)
        let got49 = s.scanDue(now: t0 + .seconds(10), hasWatcher: true)
        #expect(got49 == DrainSchedule.Scan())
    }
}
