import AssetStore
import Foundation
import Testing
import Transfer
@testable import Drain

/// The drain loop's decisions, without a store, a network or a clock, as truth tables: each row
/// is an instant (time since the start, on the monotonic clock and the wall clock alike), what
/// happens to the schedule then, and what it must answer. A failing row names its table and
/// number; the rows run in order on one schedule, so a table is also the story of a run.
@Suite struct DrainScheduleTests {
    static let endpoint = "http://receiver.test/uploads"
    static let t0 = ContinuousClock.now
    static let d0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// What happens at a row's instant.
    enum Event {
        /// `slotToStart` with this much work in the store.
        case start(vision: Int, upload: Int)
        /// A slot finished this way (`record`).
        case record(DrainRunner.SlotResult)
        /// Nothing runs (`whenIdle`).
        case idle(vision: Int, upload: Int)
        /// A reachability probe answered (`probed`).
        case probe(reachable: Bool)
        /// Is a probe due (`probeDue`)?
        case probeDue
        /// Is a scan due (`scanDue`)?
        case scanDue(watcher: Bool)
        /// The last look found this (`lastScan`).
        case lastScan(newWork: Bool, settling: [String])
        /// The watcher saw these folders change (`watched`).
        case watched(folders: [String])
        /// The watcher lost the library (`watched`).
        case libraryWentAway
        /// The watcher hit its limit (`watched`).
        case watchLimitReached
        /// When the watching loop wakes (`watchWake`).
        case wake(vision: Int, upload: Int)
        /// Has the run gone too long without an analysis (`expired`)?
        case expiry
        /// The memory headroom measured before a slot starts (`memoryBail`), in MiB.
        case headroom(mebibytes: Int, vision: Int)
        /// Is a slot free (`hasFreeSlot`: the loop counts the store's work only then)?
        case slotFree
    }

    /// What the schedule answers.
    enum Answer: Equatable {
        case start(DrainSchedule.Start?)
        case recorded(DrainSchedule.Recorded)
        case idle(DrainSchedule.Idle)
        case yes, no
        case scan(DrainSchedule.Scan?)
        case lastScan(DrainSchedule.Idle?)
        /// The number of events `watched` reports.
        case said(Int)
        /// `watchWake`'s instant, as time since the start, or nil.
        case wakeAt(Duration?)
        /// `memoryBail`'s stop, or nil.
        case bail(DrainOutcome?)
    }

    struct Row {
        var at: Duration
        var event: Event
        var answer: Answer
        init(_ at: Duration, _ event: Event, _ answer: Answer) {
            self.at = at
            self.event = event
            self.answer = answer
        }
    }

    static func schedule(_ change: (inout DrainOptions) -> Void = { _ in }, serverWait: Date? = nil) -> DrainSchedule {
        var options = DrainOptions(destination: UnavailableDestination(endpoint: endpoint,
                                                                       error: TransferError(.notFound, "not used")))
        change(&options)
        return DrainSchedule(options: options, serverWaitUntil: serverWait, watchLimited: nil, now: t0)
    }

    /// Plays `rows` on `schedule` in order; each answer is checked against its row.
    static func play(_ name: String, _ schedule: inout DrainSchedule, _ rows: [Row],
                     sourceLocation: SourceLocation = #_sourceLocation) {
        for (number, row) in rows.enumerated() {
            let now = t0 + row.at
            let date = d0.addingTimeInterval(Double(row.at.components.seconds) + Double(row.at.components.attoseconds) / 1e18)
            let got: Answer
            switch row.event {
            case .start(let vision, let upload):
                got = .start(schedule.slotToStart(work: .init(vision: vision, upload: upload), now: now, date: date))
            case .record(let result):
                got = .recorded(schedule.record(result, now: now))
            case .idle(let vision, let upload):
                got = .idle(schedule.whenIdle(work: .init(vision: vision, upload: upload), now: now, date: date))
            case .probe(let reachable):
                got = schedule.probed(reachable: reachable, now: now) ? .yes : .no
            case .probeDue:
                got = schedule.probeDue(now: now) ? .yes : .no
            case .scanDue(let watcher):
                got = .scan(schedule.scanDue(now: now, hasWatcher: watcher))
            case .lastScan(let newWork, let settling):
                got = .lastScan(schedule.lastScan(newWork: newWork, settling: settling, now: now))
            case .watched(let folders):
                var changes = LibraryChanges()
                changes.folders = Set(folders.map { Array($0.utf8) })
                got = .said(schedule.watched(changes, limitReached: nil, now: now).count)
            case .libraryWentAway:
                var changes = LibraryChanges()
                changes.wentAway = true
                got = .said(schedule.watched(changes, limitReached: nil, now: now).count)
            case .watchLimitReached:
                got = .said(schedule.watched(LibraryChanges(), limitReached: "the watch limit (8192 folders) was reached", now: now).count)
            case .wake(let vision, let upload):
                let wake = schedule.watchWake(work: .init(vision: vision, upload: upload), hasWatcher: true, now: now, date: date)
                got = .wakeAt(wake.at.map { $0 - t0 })
            case .expiry:
                got = schedule.expired(now: now) ? .yes : .no
            case .headroom(let mebibytes, let vision):
                got = .bail(schedule.memoryBail(work: .init(vision: vision, upload: 0), headroom: mebibytes << 20, limitSource: "test"))
            case .slotFree:
                got = schedule.hasFreeSlot ? .yes : .no
            }
            #expect(got == row.answer, "\(name), row \(number + 1): \(row.event) at \(row.at)", sourceLocation: sourceLocation)
        }
    }

    /// A photo's row as the store would hand it out (only its identity matters here).
    static func asset(_ id: Int64) throws -> AssetRecord {
        let json = #"{"id":\#(id),"path":"p\#(id).jpg","size":1,"mtimeNanoseconds":0,"generation":0,"discoveredAt":0,"attempts":0,"failed":false}"#
        return try JSONDecoder().decode(AssetRecord.self, from: Data(json.utf8))
    }

    static func folders(_ names: String...) -> Set<[UInt8]> { Set(names.map { Array($0.utf8) }) }

    @Test func slotsAreFilledUploadFirst() {
        var s = Self.schedule()
        Self.play("upload first", &s, [
            Row(.zero, .start(vision: 5, upload: 5), .start(.upload)),
            Row(.zero, .start(vision: 5, upload: 5), .start(.upload)),
            Row(.zero, .start(vision: 5, upload: 5), .start(.upload)),
            Row(.zero, .start(vision: 5, upload: 5), .start(nil)),        // three slots, all taken
            Row(.zero, .record(.worked(.upload)), .recorded(.carryOn)),
            Row(.zero, .start(vision: 5, upload: 0), .start(.analysis)),  // no uploads left: analysis
        ])
        #expect(s.running == [.upload, .upload, .analysis])
    }

    @Test func offlineItSaysSoOnceAnalysesMeanwhileAndProbesLessAndLessOften() {
        var s = Self.schedule { $0.slots = 2; $0.probeInterval = .seconds(1); $0.maxProbeInterval = .seconds(4) }
        Self.play("offline", &s, [
            Row(.zero, .start(vision: 2, upload: 2), .start(.upload)),
            Row(.zero, .start(vision: 2, upload: 2), .start(.upload)),
            Row(.zero, .record(.offline("connection refused")), .recorded(.wentOffline(message: "connection refused"))),
            Row(.zero, .record(.offline("again")), .recorded(.carryOn)),   // said once
            Row(.zero, .start(vision: 2, upload: 2), .start(.analysis)),   // uploads wait, analysis goes on
            Row(.zero, .start(vision: 0, upload: 2), .start(nil)),
            // The probes: 1, 2, 4, 4 s apart (first wait 1 s, doubling, ceiling 4 s).
            Row(.milliseconds(999), .probeDue, .no),
            Row(.seconds(1), .probeDue, .yes),
            Row(.seconds(1), .probe(reachable: false), .no),
            Row(.seconds(2), .probeDue, .no),
            Row(.seconds(3), .probeDue, .yes),
            Row(.seconds(3), .probe(reachable: false), .no),
            Row(.seconds(7), .probeDue, .yes),
            Row(.seconds(7), .probe(reachable: false), .no),
            Row(.milliseconds(10_999), .probeDue, .no),
            Row(.seconds(11), .probe(reachable: false), .no),
            Row(.milliseconds(14_999), .probeDue, .no),
            Row(.seconds(15), .probeDue, .yes),
            // Back: uploads again, no probing, and the next outage starts from 1 s.
            Row(.seconds(15), .probe(reachable: true), .yes),
            Row(.seconds(15), .record(.worked(.analysis)), .recorded(.carryOn)),
            Row(.seconds(60), .probeDue, .no),
            Row(.seconds(60), .start(vision: 0, upload: 2), .start(.upload)),
            Row(.seconds(60), .record(.offline("down")), .recorded(.wentOffline(message: "down"))),
            Row(.milliseconds(60_999), .probeDue, .no),
            Row(.seconds(61), .probeDue, .yes),
        ])
    }

    @Test func countedFailuresInARowPauseUploadsLongerAndASuccessEndsTheStreak() {
        var s = Self.schedule { $0.slots = 1; $0.retryBackoff = .seconds(1); $0.maxRetryBackoff = .seconds(30) }
        Self.play("failures in a row", &s, [
            Row(.zero, .start(vision: 0, upload: 3), .start(.upload)),
            Row(.zero, .record(.uploadCharged), .recorded(.carryOn)),             // pause 1 s
            Row(.milliseconds(999), .start(vision: 0, upload: 3), .start(nil)),
            Row(.seconds(1), .start(vision: 0, upload: 3), .start(.upload)),
            Row(.seconds(1), .record(.uploadCharged), .recorded(.carryOn)),       // pause 2 s
            Row(.milliseconds(2_999), .start(vision: 0, upload: 3), .start(nil)),
            Row(.seconds(3), .start(vision: 0, upload: 3), .start(.upload)),
            Row(.seconds(3), .record(.worked(.upload)), .recorded(.carryOn)),     // streak over
            Row(.seconds(3), .start(vision: 0, upload: 3), .start(.upload)),
            Row(.seconds(3), .record(.uploadCharged), .recorded(.carryOn)),       // pause 1 s again
            Row(.milliseconds(3_999), .start(vision: 0, upload: 3), .start(nil)),
            Row(.seconds(4), .start(vision: 0, upload: 3), .start(.upload)),
        ])
        #expect(s.failuresInARow == 1)
    }

    @Test func backoffDoublesFromItsBaseUpToItsCeiling() {
        // The pause each failure of a streak starts, on the schedule's own retry backoff.
        let table: [(failures: Int, pause: Duration)] = [
            (0, .zero), (1, .seconds(1)), (2, .seconds(2)), (3, .seconds(4)), (4, .seconds(8)),
            (5, .seconds(16)), (6, .seconds(30)), (7, .seconds(30)), (1000, .seconds(30)),
        ]
        for (failures, pause) in table {
            var s = Self.schedule { $0.slots = 1; $0.retryBackoff = .seconds(1); $0.maxRetryBackoff = .seconds(30) }
            var last: Duration = .zero
            for _ in 0..<failures {
                let now = ContinuousClock.now
                _ = s.record(.uploadCharged, now: now)
                last = s.uploadsPausedUntil - now
            }
            #expect(last == pause, "after \(failures) failures")
        }
    }

    @Test func aPhotoTooBigForASlotIsAnalysedAloneOnceTheOthersAreDone() throws {
        var s = Self.schedule()
        let big = try Self.asset(7)
        Self.play("alone", &s, [
            Row(.zero, .start(vision: 5, upload: 0), .start(.analysis)),
            Row(.zero, .start(vision: 5, upload: 0), .start(.analysis)),
            Row(.zero, .record(.needsAlone(big)), .recorded(.carryOn)),
            Row(.zero, .start(vision: 5, upload: 0), .start(nil)),          // one analysis still runs
            Row(.zero, .record(.worked(.analysis)), .recorded(.carryOn)),
            Row(.zero, .start(vision: 5, upload: 0), .start(.alone(big))),
            Row(.zero, .start(vision: 5, upload: 0), .start(nil)),          // nothing analyses beside it
            Row(.zero, .record(.worked(.analysisAlone)), .recorded(.carryOn)),
            Row(.zero, .start(vision: 5, upload: 0), .start(.analysis)),
        ])
    }

    @Test func aRefusalOrAStoreFailureEndsTheRun() {
        let table: [(DrainRunner.SlotResult, DrainSchedule.Recorded)] = [
            (.refused("unauthorized: 401"), .end(.refused(message: "unauthorized: 401"))),
            (.storeFailed("disk I/O error"), .end(.failed(message: "disk I/O error"))),
        ]
        for (result, recorded) in table {
            var s = Self.schedule()
            Self.play("\(result)", &s, [
                Row(.zero, .start(vision: 0, upload: 1), .start(.upload)),
                Row(.zero, .record(result), .recorded(recorded)),
            ])
        }
    }

    @Test func aServersShortRetryAfterIsWaitedOutAndALongOneEndsTheRun() {
        var short = Self.schedule({ $0.retryAfterLimit = .seconds(60) }, serverWait: Self.d0.addingTimeInterval(5))
        Self.play("short Retry-After", &short, [
            Row(.zero, .start(vision: 0, upload: 1), .start(nil)),
            Row(.zero, .idle(vision: 0, upload: 1), .idle(.wait(.milliseconds(200)))),
            Row(.seconds(6), .start(vision: 0, upload: 1), .start(.upload)),
        ])
        let until = Self.d0.addingTimeInterval(3600)
        var long = Self.schedule({ $0.retryAfterLimit = .seconds(60) }, serverWait: until)
        Self.play("long Retry-After", &long, [
            Row(.zero, .idle(vision: 0, upload: 1), .idle(.finish(.retryLater(until: until)))),
        ])
        var answered = Self.schedule { $0.slots = 1; $0.retryAfterLimit = .seconds(60) }
        Self.play("Retry-After in an answer", &answered, [
            Row(.zero, .start(vision: 1, upload: 1), .start(.upload)),
            Row(.zero, .record(.retryAfter(Self.d0.addingTimeInterval(10))), .recorded(.carryOn)),
            Row(.zero, .start(vision: 1, upload: 1), .start(.analysis)),   // analysis meanwhile
            Row(.zero, .record(.worked(.analysis)), .recorded(.carryOn)),
            Row(.seconds(9), .start(vision: 0, upload: 1), .start(nil)),
            Row(.seconds(10), .start(vision: 0, upload: 1), .start(.upload)),
        ])
    }

    @Test func offlineWithOnlyUploadsLeftItGivesUpAfterTheOfflineTimeout() {
        var s = Self.schedule { $0.slots = 1; $0.offlineGiveUp = .seconds(120) }
        Self.play("offline timeout", &s, [
            Row(.zero, .start(vision: 0, upload: 4), .start(.upload)),
            Row(.zero, .record(.offline("down")), .recorded(.wentOffline(message: "down"))),
            Row(.seconds(119), .idle(vision: 0, upload: 4), .idle(.wait(.milliseconds(200)))),
            Row(.seconds(120), .idle(vision: 0, upload: 4),
                .idle(.finish(.offline(message: "\(Self.endpoint) has been unreachable for 120 s (--offline-timeout)")))),
        ])
    }

    @Test func photosHeldByAnotherRunnerEndTheRunOnceNothingElseIsLeft() {
        var s = Self.schedule { $0.slots = 1 }
        Self.play("held elsewhere", &s, [
            Row(.zero, .start(vision: 3, upload: 0), .start(.analysis)),
            Row(.zero, .record(.noWork(.analysis)), .recorded(.carryOn)),
            Row(.zero, .idle(vision: 3, upload: 0), .idle(.finish(.finished))),
        ])
    }

    @Test func filesStillBeingWrittenAreWaitedForUpToTheSettleLimit() {
        var s = Self.schedule { $0.quietPeriod = .seconds(2); $0.settleLimit = .seconds(60) }
        #expect(!s.finishesWithoutLooking)
        #expect(Self.schedule { $0.rescanInterval = nil }.finishesWithoutLooking)
        Self.play("settling", &s, [
            Row(.zero, .lastScan(newWork: false, settling: ["a.jpg"]), .lastScan(.wait(.milliseconds(500)))),
            Row(.seconds(59), .lastScan(newWork: false, settling: ["a.jpg"]), .lastScan(.wait(.milliseconds(500)))),
            Row(.seconds(60), .lastScan(newWork: false, settling: ["a.jpg"]), .lastScan(.finish(.stillChanging(paths: ["a.jpg"])))),
            Row(.seconds(61), .lastScan(newWork: true, settling: []), .lastScan(nil)),
            Row(.seconds(62), .lastScan(newWork: false, settling: []), .lastScan(.finish(.finished))),
        ])
    }

    @Test func rescansComeEveryInterval() {
        var s = Self.schedule { $0.rescanInterval = .seconds(10) }
        Self.play("rescans", &s, [
            Row(.seconds(9), .scanDue(watcher: false), .scan(nil)),
            Row(.seconds(10), .scanDue(watcher: false), .scan(DrainSchedule.Scan())),
            Row(.seconds(11), .scanDue(watcher: false), .scan(nil)),
            Row(.seconds(19), .scanDue(watcher: false), .scan(nil)),
            Row(.seconds(20), .scanDue(watcher: false), .scan(DrainSchedule.Scan())),
        ])
    }

    /// The bounds of an analysis-only run (`analyze`, `wake`): no destination, so no upload work.
    static func analysisOnly(_ change: (inout DrainOptions) -> Void) -> DrainSchedule {
        var options = DrainOptions(destination: nil)
        options.slots = 2
        options.rescanInterval = nil
        change(&options)
        return DrainSchedule(options: options, serverWaitUntil: nil, watchLimited: nil, now: t0)
    }

    @Test func aRunWithoutAnAnalysisForItsExpiryStops() throws {
        let big = try Self.asset(3)
        var s = Self.analysisOnly { $0.expireAfter = .seconds(30) }
        Self.play("expiry", &s, [
            Row(.zero, .start(vision: 9, upload: 0), .start(.analysis)),
            Row(.seconds(30), .expiry, .no),                                  // 30 s: not yet past
            Row(.milliseconds(30_001), .expiry, .yes),
            Row(.seconds(31), .record(.worked(.analysis)), .recorded(.carryOn)),  // a verdict: the clock starts over
            Row(.seconds(60), .expiry, .no),
            Row(.seconds(61), .start(vision: 8, upload: 0), .start(.analysis)),
            Row(.seconds(61), .record(.needsAlone(big)), .recorded(.carryOn)),   // not an analysis finished
            Row(.milliseconds(61_001), .expiry, .yes),
        ])
        var never = Self.analysisOnly { _ in }
        Self.play("no expiry", &never, [Row(.seconds(86_400), .expiry, .no)])
    }

    @Test func aBoundedRunClaimsItsPhotosThenFinishes() {
        var s = Self.analysisOnly { $0.maxAnalyses = 3 }
        Self.play("one page of three", &s, [
            Row(.zero, .start(vision: 9, upload: 0), .start(.analysis)),
            Row(.zero, .start(vision: 9, upload: 0), .start(.analysis)),
            Row(.zero, .start(vision: 9, upload: 0), .start(nil)),               // two slots
            Row(.zero, .record(.noWork(.analysis)), .recorded(.carryOn)),        // claimed nothing: not counted
            Row(.zero, .start(vision: 9, upload: 0), .start(nil)),               // none found: not asked again…
            Row(.zero, .record(.worked(.analysis)), .recorded(.carryOn)),        // …until one finishes
            Row(.zero, .start(vision: 8, upload: 0), .start(.analysis)),
            Row(.zero, .start(vision: 8, upload: 0), .start(.analysis)),
            Row(.zero, .record(.worked(.analysis)), .recorded(.carryOn)),
            Row(.zero, .start(vision: 7, upload: 0), .start(nil)),               // three claimed
            Row(.zero, .record(.worked(.analysis)), .recorded(.carryOn)),
            Row(.zero, .idle(vision: 6, upload: 0), .idle(.finish(.finished))),
        ])
    }

    @Test func belowTheMemoryFloorNoAnalysisStarts() throws {
        var s = Self.analysisOnly { $0.bailBelowHeadroom = 100 << 20 }
        Self.play("memory floor", &s, [
            Row(.zero, .headroom(mebibytes: 100, vision: 5), .bail(nil)),
            Row(.zero, .start(vision: 5, upload: 0), .start(.analysis)),
            Row(.zero, .start(vision: 5, upload: 0), .start(.analysis)),
            Row(.zero, .slotFree, .no),                                          // the loop asks nothing…
            Row(.zero, .headroom(mebibytes: 10, vision: 5), .bail(nil)),         // …as no slot is free: nothing would start
            Row(.zero, .start(vision: 5, upload: 0), .start(nil)),
            Row(.zero, .record(.worked(.analysis)), .recorded(.carryOn)),
            Row(.zero, .slotFree, .yes),
            Row(.zero, .headroom(mebibytes: 10, vision: 0), .bail(nil)),         // nothing left to start
            Row(.zero, .headroom(mebibytes: 99, vision: 4), .bail(.memoryExhausted)),
        ])
        #expect(s.bailed == "memory headroom 99 MiB is too small to analyse a photo (limit from test)")
        var drain = Self.analysisOnly { _ in }
        Self.play("no floor", &drain, [Row(.zero, .headroom(mebibytes: 0, vision: 5), .bail(nil))])
    }

    @Test func watchedChangesAreScannedInBatches() {
        var w = Self.schedule { $0.watch = true; $0.rescanInterval = nil; $0.watchBatchDelay = .milliseconds(500) }
        Self.play("watched batches", &w, [
            Row(.zero, .watched(folders: ["2024"]), .said(0)),
            Row(.zero, .scanDue(watcher: true), .scan(DrainSchedule.Scan(folders: Self.folders("2024"), full: false, batch: 1))),
            Row(.zero, .watched(folders: ["2025"]), .said(0)),
            Row(.milliseconds(499), .scanDue(watcher: true), .scan(nil)),
            Row(.milliseconds(500), .scanDue(watcher: true), .scan(DrainSchedule.Scan(folders: Self.folders("2025"), full: false, batch: 1))),
            Row(.milliseconds(600), .watched(folders: ["a", "b"]), .said(0)),
            Row(.seconds(1), .scanDue(watcher: true), .scan(DrainSchedule.Scan(folders: Self.folders("a", "b"), full: false, batch: 2))),
            Row(.seconds(3600), .scanDue(watcher: true), .scan(nil)),      // no rescans while watching whole
        ])
    }

    @Test func watchingALibraryThatGoesAwayIsSaidOnceAndNotScanned() {
        var s = Self.schedule { $0.watch = true; $0.rescanInterval = .seconds(10) }
        Self.play("library away", &s, [
            Row(.zero, .libraryWentAway, .said(1)),
            Row(.seconds(1), .libraryWentAway, .said(0)),                  // said once
            Row(.seconds(60), .scanDue(watcher: true), .scan(nil)),
            Row(.seconds(60), .start(vision: 3, upload: 3), .start(nil)),
            Row(.seconds(60), .wake(vision: 3, upload: 3), .wakeAt(nil)),
        ])
        #expect(s.libraryAway)
    }

    @Test func aWatchLimitTurnsTheRescansOn() {
        var s = Self.schedule { $0.watch = true; $0.rescanInterval = nil }
        Self.play("watch limit", &s, [
            Row(.seconds(3600), .scanDue(watcher: true), .scan(nil)),
            Row(.zero, .watchLimitReached, .said(0)),           // no event: the rescans take over
            Row(.seconds(9), .scanDue(watcher: true), .scan(nil)),
            Row(.seconds(10), .scanDue(watcher: true), .scan(DrainSchedule.Scan())),
        ])
    }
}

/// The agent's and the drain loop's rhythm while a destination is away (`AwayBackoff`), as a table.
@Suite struct AwayBackoffTests {
    enum Event { case failed, answered, due }
    enum Answer: Equatable { case wait(Duration), ok, due(Bool) }

    @Test func waitsDoubleToTheCeilingAndStartOverWhenTheDestinationAnswers() {
        let t0 = ContinuousClock.now
        var backoff = AwayBackoff(first: .seconds(1), ceiling: .seconds(30))
        let table: [(at: Duration, event: Event, answer: Answer)] = [
            (.zero, .due, .due(true)),                      // nothing away yet
            (.zero, .failed, .wait(.seconds(1))),
            (.milliseconds(999), .due, .due(false)),
            (.seconds(1), .due, .due(true)),
            (.seconds(1), .failed, .wait(.seconds(2))),
            (.seconds(3), .failed, .wait(.seconds(4))),
            (.seconds(7), .failed, .wait(.seconds(8))),
            (.seconds(15), .failed, .wait(.seconds(16))),
            (.seconds(31), .failed, .wait(.seconds(30))),   // the ceiling
            (.seconds(61), .failed, .wait(.seconds(30))),
            (.seconds(90), .due, .due(false)),
            (.seconds(91), .due, .due(true)),
            (.seconds(91), .answered, .ok),
            (.seconds(91), .due, .due(true)),
            (.seconds(100), .failed, .wait(.seconds(1))),   // a new outage starts from the first wait
            (.milliseconds(100_500), .due, .due(false)),
        ]
        for (number, row) in table.enumerated() {
            let now = t0 + row.at
            let got: Answer = switch row.event {
            case .failed: .wait(backoff.failed(now: now))
            case .answered: { backoff.answered(); return .ok }()
            case .due: .due(backoff.isDue(now: now))
            }
            #expect(got == row.answer, "row \(number + 1): \(row.event) at \(row.at)")
        }
    }

    @Test func aCeilingBelowTheFirstWaitIsTheFirstWait() {
        var backoff = AwayBackoff(first: .seconds(5), ceiling: .seconds(1))
        let now = ContinuousClock.now
        #expect([backoff.failed(now: now), backoff.failed(now: now)] == [.seconds(5), .seconds(5)])
    }
}
