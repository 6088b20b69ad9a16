import Drain
import Testing

/// `FreeSpacePlan`'s rules as truth tables (issue 33): each rule that keeps a photo has a row
/// that removes the photo once the rule is taken out.
@Suite struct FreeSpacePlanTests {
    typealias Plan = FreeSpacePlan

    static func safe(_ path: String, size: Int64 = 100) -> Plan.FileFacts {
        Plan.FileFacts(path: path, size: size, proof: .verified, local: .same, answer: .present)
    }

    static let surroundings = Plan.Surroundings(libraryFiles: 10, libraryLooksEmpty: false, freeBytes: 0, totalBytes: 1000)

    @Test(arguments: [
        (Plan.FileFacts(path: "a", size: 1, proof: .verified, local: .same, answer: .present), nil),
        (Plan.FileFacts(path: "a", size: 1, proof: .none), Plan.Reason.notUploaded),
        (Plan.FileFacts(path: "a", size: 1, proof: .unverified, local: .same, answer: .present), .unverifiedProof),
        (Plan.FileFacts(path: "a", size: 1, proof: .legacy, local: .same, answer: .present), .legacyProof),
        (Plan.FileFacts(path: "a", size: 1, proof: .verified, local: .changed), .changedSinceUpload),
        (Plan.FileFacts(path: "a", size: 1, proof: .verified, local: .changed, answer: .present), .changedSinceUpload),
        (Plan.FileFacts(path: "a", size: 1, proof: .verified, local: .unreadable("gone")), .unreadable("gone")),
        (Plan.FileFacts(path: "a", size: 1, proof: .verified, local: .notRead, answer: .present), .unreadable("not checked")),
        (Plan.FileFacts(path: "a", size: 1, proof: .verified, local: .same, answer: .missing), .missingAtDestination),
        (Plan.FileFacts(path: "a", size: 1, proof: .verified, local: .same, answer: .notAsked), .missingAtDestination),
        (Plan.FileFacts(path: "a", size: 1, proof: .verified, local: .same, answer: .mismatched("other")), .mismatchedAtDestination("other")),
    ] as [(Plan.FileFacts, Plan.Reason?)])
    func aFileIsSafeOnlyWithEveryProof(_ file: Plan.FileFacts, _ expected: Plan.Reason?) {
        #expect(Plan.reason(for: file) == expected)
    }

    @Test func aCompanionNotProvenKeepsItsPhotoAndThePhotoItsCompanions() {
        var movie = Self.safe("IMG_1.MOV")
        movie.answer = .missing
        let pair = Plan.Group(photo: Self.safe("IMG_1.HEIC"), companions: [Self.safe("IMG_1.AAE"), movie], date: 0)
        #expect(Plan.reason(for: pair) == .companion(path: "IMG_1.MOV", .missingAtDestination))
        let outcome = Plan.decide([pair], selection: Plan.Selection(maxFraction: 1), surroundings: Self.surroundings)
        #expect(outcome.remove.isEmpty)
        #expect(outcome.keep.map(\.group) == [pair])

        var unsafePhoto = pair
        unsafePhoto.companions = [Self.safe("IMG_1.MOV")]
        unsafePhoto.photo.local = .changed
        #expect(Plan.reason(for: unsafePhoto) == .changedSinceUpload)
        let whole = Plan.Group(photo: Self.safe("IMG_1.HEIC"), companions: [Self.safe("IMG_1.MOV")], date: 0)
        let removed = Plan.decide([whole], selection: Plan.Selection(maxFraction: 1), surroundings: Self.surroundings)
        #expect(removed.remove == [whole])
        #expect(removed.freedBytes == 200)
    }

    @Test func olderThanAndKeepRecentChooseByDate() {
        // Dates 10, 40, 20, 30: now 50, older than 15 → dates ≤ 35.
        let dates: [Double] = [10, 40, 20, 30]
        let all = Plan.consider(dates: dates, selection: Plan.Selection(), now: 50)
        #expect(all.considered == [0, 2, 3, 1])
        #expect(all.kept.isEmpty)
        let old = Plan.consider(dates: dates, selection: Plan.Selection(olderThan: 15), now: 50)
        #expect(old.considered == [0, 2, 3])
        #expect(old.kept.map(\.index) == [1] && old.kept.map(\.reason) == [.tooRecent])
        let recent = Plan.consider(dates: dates, selection: Plan.Selection(olderThan: 0, keepRecent: 2), now: 50)
        #expect(recent.considered == [0, 2])
        #expect(recent.kept.map(\.index) == [1, 3] && recent.kept.map(\.reason) == [.keptRecent, .keptRecent])
        #expect(Plan.consider(dates: dates, selection: Plan.Selection(keepRecent: 9), now: 50).considered.isEmpty)
    }

    @Test func untilFreeStopsOnceTheTargetIsReachedOldestFirst() {
        let groups = (0..<4).map { Plan.Group(photo: Self.safe("p\($0)", size: 100), date: Double($0)) }
        var around = Self.surroundings
        around.freeBytes = 150
        let bytes = Plan.decide(groups, selection: Plan.Selection(untilFree: .bytes(320), maxFraction: 1), surroundings: around)
        #expect(bytes.remove.map(\.photo.path) == ["p0", "p1"])
        #expect(bytes.keep.map(\.reason) == [.enoughFree, .enoughFree])
        // 25% of 1000 bytes: 250 wanted, 150 free, one photo of 100 is enough.
        let share = Plan.decide(groups, selection: Plan.Selection(untilFree: .fraction(0.25), maxFraction: 1), surroundings: around)
        #expect(share.remove.map(\.photo.path) == ["p0"])
        around.freeBytes = 400
        #expect(Plan.decide(groups, selection: Plan.Selection(untilFree: .bytes(320), maxFraction: 1), surroundings: around).remove.isEmpty)
        // An unsafe photo frees nothing: the next safe one is taken instead.
        var mixed = groups
        mixed[0].photo.answer = .missing
        around.freeBytes = 150
        let skipped = Plan.decide(mixed, selection: Plan.Selection(untilFree: .bytes(220), maxFraction: 1), surroundings: around)
        #expect(skipped.remove.map(\.photo.path) == ["p1"])
    }

    @Test func maxFractionStopsTheWholeRun() {
        let groups = (0..<6).map { Plan.Group(photo: Self.safe("p\($0)"), date: Double($0)) }
        let over = Plan.decide(groups, selection: Plan.Selection(maxFraction: 0.5), surroundings: Self.surroundings)
        #expect(over.stop == .overMaxFraction(files: 6, of: 10, limit: 0.5))
        #expect(over.removable.isEmpty)
        let under = Plan.decide(Array(groups.prefix(5)), selection: Plan.Selection(maxFraction: 0.5), surroundings: Self.surroundings)
        #expect(under.stop == nil)
        #expect(under.removable.count == 5)
        #expect(Plan.decide(groups, selection: Plan.Selection(maxFraction: 1), surroundings: Self.surroundings).removable.count == 6)
        // Companions count as files of the library.
        let pairs = (0..<3).map { Plan.Group(photo: Self.safe("p\($0)"), companions: [Self.safe("m\($0)")], date: 0) }
        #expect(Plan.decide(pairs, selection: Plan.Selection(maxFraction: 0.5), surroundings: Self.surroundings).stop
                == .overMaxFraction(files: 6, of: 10, limit: 0.5))
    }

    @Test func anEmptyOrUnmountedLibraryRemovesNothing() {
        let groups = [Plan.Group(photo: Self.safe("p0"), date: 0)]
        var around = Self.surroundings
        around.libraryLooksEmpty = true
        let outcome = Plan.decide(groups, selection: Plan.Selection(maxFraction: 1), surroundings: around)
        #expect(outcome.stop == .libraryLooksEmpty)
        #expect(outcome.removable.isEmpty)
        around.libraryLooksEmpty = false
        #expect(Plan.decide(groups, selection: Plan.Selection(maxFraction: 1), surroundings: around).removable == groups)
    }
}
