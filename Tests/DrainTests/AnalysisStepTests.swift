import AssetStore
import FaceAnalysis
import Foundation
import PhotoAnalysis
import Synchronization
import Testing
@testable import Drain

/// An analyser whose every photo needs `needs` bytes: it defers any budget below that, and
/// counts its calls and the times it was asked to hand back idle memory.
final class NeedyAnalyzer: PhotoAnalyzing {
    let needs: Int
    let budgets = Mutex<[Int?]>([])
    let releases = Mutex(0)
    init(needs: Int) { self.needs = needs }
    func analyze(path: String, memoryBudget: Int?) -> AnalysisResult {
        budgets.withLock { $0.append(memoryBudget) }
        if let memoryBudget, memoryBudget < needs { return .deferred(reason: "needs \(needs)", needs: needs) }
        return .verdict(.noFaces)
    }
    func releaseIdleMemory() { releases.withLock { $0 += 1 } }
}

/// The one analysis step every runner takes (`AnalysisStep`), as a truth table: slots, whether
/// the photo starts alone, and what it needs against a headroom of 100 MiB, to the outcome, the
/// budgets the analyser was given, and whether it was asked for its idle memory first.
@Suite struct AnalysisStepTests {
    static let mib = 1 << 20

    enum Kind: Equatable { case banked, needsAlone, deferred }
    /// A budget the analyser is given: a slot's share of the headroom, or all of it.
    enum Budget { case share, all }

    struct Row {
        var slots: Int
        var alone: Bool
        var needsMiB: Int
        var kind: Kind
        var budgets: [Budget]
        var releases: Int
    }

    static let table: [Row] = [
        // Fits a slot's share (100 / 3 = 33 MiB): banked, no idle memory asked for.
        Row(slots: 3, alone: false, needsMiB: 20, kind: .banked, budgets: [.share], releases: 0),
        // Fits only the whole headroom: analysed alone later, by the runner's queue.
        Row(slots: 3, alone: false, needsMiB: 50, kind: .needsAlone, budgets: [.share], releases: 0),
        // Alone it has all of it, after the idle memory is handed back.
        Row(slots: 3, alone: true, needsMiB: 50, kind: .banked, budgets: [.all], releases: 1),
        // More than all of it: deferred.
        Row(slots: 3, alone: true, needsMiB: 150, kind: .deferred, budgets: [.all], releases: 1),
        // One slot is alone already: tried again at once with all of it.
        Row(slots: 1, alone: false, needsMiB: 50, kind: .banked, budgets: [.share], releases: 0),
        Row(slots: 1, alone: false, needsMiB: 150, kind: .deferred, budgets: [.share, .all], releases: 1),
        Row(slots: 2, alone: false, needsMiB: 50, kind: .banked, budgets: [.share], releases: 0),
    ]

    @Test(arguments: table.indices)
    func eachPhotoGetsTheBudgetTheRuleGives(_ index: Int) throws {
        let row = Self.table[index]
        let library = try Library(photos: 1)
        let store = try library.store()
        _ = try store.scan()
        let asset = try #require(try store.claimUnanalyzed(limit: 1).first)
        let analyzer = NeedyAnalyzer(needs: row.needsMiB * Self.mib)
        // The fake process's resident set reads 40 MiB: the limit leaves 100 MiB of headroom.
        let memory = MemoryGuard(configuredLimit: (140 << 20), reserve: 0, probe: FakeSystem().probe)
        #expect(memory.read().headroom == 100 * Self.mib)
        let outcome = try AnalysisStep(store: store, analyzer: analyzer, memory: memory, slots: row.slots).run(asset, alone: row.alone)
        let kind: Kind = switch outcome {
        case .banked: .banked
        case .needsAlone: .needsAlone
        case .deferred: .deferred
        }
        #expect(kind == row.kind, "row \(index + 1)")
        let headroom = 100 * Self.mib
        let expected: [Int?] = row.budgets.map { $0 == .all ? headroom : headroom / row.slots }
        #expect(analyzer.budgets.withLock { $0 } == expected, "row \(index + 1)")
        #expect(analyzer.releases.withLock { $0 } == row.releases, "row \(index + 1)")
        // A banked verdict is on the row; anything else leaves the row unanalysed.
        #expect(((try store.asset(path: asset.path))?.analyzedAt != nil) == (row.kind == .banked), "row \(index + 1)")
    }
}
