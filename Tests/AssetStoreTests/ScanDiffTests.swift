import Testing
@testable import AssetStore

/// What a scan counts as a change (`ScanDiff`), as a truth table: a row as the store has it, the
/// file as the walk found it, what a rehash of it gave, whether it is still being written, and
/// what the scan must make of it.
@Suite struct ScanDiffTests {
    static let stampA = FileStamp(ctimeNanoseconds: 100, inode: 7, device: 1)
    static let stampB = FileStamp(ctimeNanoseconds: 200, inode: 7, device: 1)

    enum Fate: Equatable { case nothing, added, modified, restamped, settling, settlingNew, unhashed, removed }

    struct Row {
        var name: String
        var known: ScanDiff.Known?
        var file: FileEntry?
        var digest: AssetStore.Rehashed?
        var stillChanging = false
        var fate: Fate
    }

    static func known(size: Int = 10, mtime: Int64 = 5, stamp: FileStamp? = stampA, sha256: String? = "aa") -> ScanDiff.Known {
        ScanDiff.Known(id: 1, size: size, mtimeNanoseconds: mtime, stamp: stamp, sha256: sha256)
    }

    static func file(size: Int = 10, mtime: Int64 = 5, stamp: FileStamp = stampA) -> FileEntry {
        FileEntry(path: "2024/a.jpg", size: size, mtimeNanoseconds: mtime, stamp: stamp)
    }

    static let table: [Row] = [
        Row(name: "unchanged", known: known(), file: file(), fate: .nothing),
        Row(name: "new file", known: nil, file: file(), fate: .added),
        Row(name: "new file still being copied", known: nil, file: file(), stillChanging: true, fate: .settlingNew),
        Row(name: "gone", known: known(), file: nil, fate: .removed),
        Row(name: "new size", known: known(), file: file(size: 11), fate: .modified),
        Row(name: "new mtime", known: known(), file: file(mtime: 6), fate: .modified),
        Row(name: "new size, still being written", known: known(), file: file(size: 11), stillChanging: true, fate: .settling),
        Row(name: "row from before stamps", known: known(stamp: nil), file: file(), fate: .restamped),
        Row(name: "new stamp, same digest", known: known(), file: file(stamp: stampB), digest: .digest("aa"), fate: .restamped),
        Row(name: "new stamp, other digest", known: known(), file: file(stamp: stampB), digest: .digest("bb"), fate: .modified),
        Row(name: "new stamp, unreadable", known: known(), file: file(stamp: stampB), digest: .unreadable, fate: .modified),
        Row(name: "new stamp, not hashed", known: known(), file: file(stamp: stampB), digest: nil, fate: .unhashed),
        Row(name: "new stamp, no digest banked", known: known(sha256: nil), file: file(stamp: stampB), fate: .modified),
        Row(name: "new stamp, other digest, still being written", known: known(), file: file(stamp: stampB),
            digest: .digest("bb"), stillChanging: true, fate: .settling),
    ]

    static func fate(of diff: ScanDiff) -> Fate {
        if !diff.removed.isEmpty { return .removed }
        if diff.settlingNew > 0 { return .settlingNew }
        if !diff.settling.isEmpty { return .settling }
        if !diff.unhashed.isEmpty { return .unhashed }
        switch diff.changes.first {
        case .added?: return .added
        case .modified?: return .modified
        case .restamped?: return .restamped
        case nil: return .nothing
        }
    }

    @Test(arguments: table.indices)
    func eachFileMeetsItsFate(_ index: Int) {
        let row = Self.table[index]
        var known: [String: ScanDiff.Known] = row.known.map { ["2024/a.jpg": $0] } ?? [:]
        let digests: [String: AssetStore.Rehashed] = row.digest.map { ["2024/a.jpg": $0] } ?? [:]
        let diff = ScanDiff.between(known: &known, files: row.file.map { [$0] } ?? [], digests: digests,
                                    stillChanging: { _ in row.stillChanging })
        #expect(Self.fate(of: diff) == row.fate, "\(row.name)")
        #expect(diff.changes.count + diff.removed.count + diff.settling.count + diff.unhashed.count <= 1, "\(row.name): one fate only")
        if row.fate == .unhashed { #expect(diff.unhashed == ["2024"]) }
        if row.fate == .restamped { #expect(diff.changes == [.restamped(id: 1, Self.file(stamp: row.file!.stamp).stamp)]) }
        #expect(known.isEmpty, "\(row.name): the rows are handed back spent")
    }

    @Test func changesKeepTheWalksOrderAndRemovalsArePathOrdered() {
        var known: [String: ScanDiff.Known] = [
            "b.jpg": ScanDiff.Known(id: 2, size: 1, mtimeNanoseconds: 1, stamp: Self.stampA, sha256: nil),
            "z.jpg": ScanDiff.Known(id: 9, size: 1, mtimeNanoseconds: 1, stamp: Self.stampA, sha256: nil),
            "y.jpg": ScanDiff.Known(id: 8, size: 1, mtimeNanoseconds: 1, stamp: Self.stampA, sha256: nil),
        ]
        let files = [
            FileEntry(path: "c.jpg", size: 1, mtimeNanoseconds: 1, stamp: Self.stampA),
            FileEntry(path: "b.jpg", size: 2, mtimeNanoseconds: 1, stamp: Self.stampA),
            FileEntry(path: "a.jpg", size: 1, mtimeNanoseconds: 1, stamp: Self.stampA),
        ]
        let diff = ScanDiff.between(known: &known, files: files, digests: [:], stillChanging: { _ in false })
        #expect(diff.changes == [.added(files[0]), .modified(id: 2, files[1]), .added(files[2])])
        #expect(diff.removed.map(\.path) == ["y.jpg", "z.jpg"])
        #expect(diff.removed.map(\.id) == [8, 9])
    }
}
