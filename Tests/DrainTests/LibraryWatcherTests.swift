import Foundation
import Testing
@testable import Drain

/// The inotify watcher behind `drain --watch` names the folders where something
/// changed, watches folders created later, asks for a full walk when events were lost, and waits
/// for a library folder that went away.
@Suite struct LibraryWatcherTests {
    /// A fresh folder for one test, removed after it.
    final class Folder {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pd-watch-\(UUID().uuidString)")
        var library: URL { url.appendingPathComponent("library") }
        var root: String { library.path }

        init(folders: [String] = [], files: [String] = []) throws {
            try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
            for folder in folders { try FileManager.default.createDirectory(at: library.appendingPathComponent(folder), withIntermediateDirectories: true) }
            for file in files { try write(file) }
        }

        deinit { try? FileManager.default.removeItem(at: url) }

        func write(_ relative: String, _ text: String = "bytes") throws {
            try Data(text.utf8).write(to: library.appendingPathComponent(relative))
        }

        func path(_ relative: String) -> String { library.appendingPathComponent(relative).path }
    }

    /// What the watcher saw, once the events of one action have all arrived.
    static func changes(of watcher: LibraryWatcher, within seconds: Double = 5) -> LibraryChanges {
        var changes = watcher.waitForChanges(timeout: .milliseconds(Int(seconds * 1000)))
        changes.merge(watcher.waitForChanges(timeout: .milliseconds(200)))
        return changes
    }

    /// One change to a library of `a/old.jpg`, `b/` and `.hidden/`, and the folders it is seen in.
    enum Action: String, CaseIterable, Sendable {
        case createAtTheTop, createInAFolder, rewriteInPlace, touch, moveBetweenFolders, delete, hiddenFile, fileInAHiddenFolder

        func perform(in folder: Folder) throws {
            let files = FileManager.default
            switch self {
            case .createAtTheTop: try folder.write("new.jpg")
            case .createInAFolder: try folder.write("b/new.jpg")
            case .rewriteInPlace: try folder.write("a/old.jpg", "other bytes")
            case .touch: try files.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000)], ofItemAtPath: folder.path("a/old.jpg"))
            case .moveBetweenFolders: try files.moveItem(atPath: folder.path("a/old.jpg"), toPath: folder.path("b/old.jpg"))
            case .delete: try files.removeItem(atPath: folder.path("a/old.jpg"))
            case .hiddenFile: try folder.write("a/.old.jpg.part")
            case .fileInAHiddenFolder: try folder.write(".hidden/new.jpg")
            }
        }

        var folders: [String] {
            switch self {
            case .createAtTheTop: [""]
            case .createInAFolder: ["b"]
            case .rewriteInPlace, .touch, .delete: ["a"]
            case .moveBetweenFolders: ["a", "b"]
            case .hiddenFile, .fileInAHiddenFolder: []
            }
        }
    }

    @Test(arguments: Action.allCases)
    func eachChangeNamesTheFoldersItHappenedIn(_ action: Action) throws {
        let folder = try Folder(folders: ["a", "b", ".hidden"], files: ["a/old.jpg"])
        let watcher = try LibraryWatcher(root: folder.root)
        #expect(watcher.folderCount == 3)  // the library, a and b; not .hidden
        try action.perform(in: folder)
        let changes = Self.changes(of: watcher, within: action.folders.isEmpty ? 0.5 : 5)
        #expect(changes.folderNames == action.folders)
        #expect(!changes.fullScan && !changes.wentAway)
    }

    @Test func aFolderCreatedLaterIsWatchedWithEverythingBelowIt() throws {
        let folder = try Folder()
        let watcher = try LibraryWatcher(root: folder.root)
        #expect(watcher.folderCount == 1)
        // Both folders at once: the inner one exists before the outer one's event is read, and is
        // reported itself, as what was written into it before its watch began must be found.
        try FileManager.default.createDirectory(atPath: folder.path("2024/March"), withIntermediateDirectories: true)
        let created = Self.changes(of: watcher)
        #expect(created.folderNames.contains(""))
        #expect(created.folderNames.contains("2024"))
        #expect(watcher.folderCount == 3)
        try folder.write("2024/March/new.jpg")
        #expect(Self.changes(of: watcher).folderNames == ["2024/March"])
        // Moved within the library: watched under its new name.
        try FileManager.default.moveItem(atPath: folder.path("2024"), toPath: folder.path("2025"))
        #expect(Self.changes(of: watcher).folderNames.contains(""))
        try folder.write("2025/March/other.jpg")
        #expect(Self.changes(of: watcher).folderNames == ["2025/March"])
        // Deleted: no longer watched.
        try FileManager.default.removeItem(atPath: folder.path("2025"))
        #expect(Self.changes(of: watcher).folderNames.contains(""))
        #expect(watcher.folderCount == 1)
    }

    @Test func theStoresOwnFilesAreIgnored() throws {
        let folder = try Folder()
        let watcher = try LibraryWatcher(root: folder.root, excluding: [folder.path("store.sqlite"), folder.path("store.sqlite-wal")])
        try folder.write("store.sqlite")
        try folder.write("store.sqlite-wal")
        #expect(Self.changes(of: watcher, within: 0.5).isEmpty)
    }

    /// More events than the kernel queues (`fs.inotify.max_queued_events`) before any is read:
    /// the rest are lost, so the caller must walk in full; a folder created among them is watched.
    @Test(.enabled(if: Self.queueLimit.map { $0 <= 65_536 } ?? false, "needs a queue limit small enough to fill quickly"))
    func aQueueOverflowAsksForAFullScan() throws {
        let folder = try Folder(folders: ["many"])
        let watcher = try LibraryWatcher(root: folder.root)
        let limit = try #require(Self.queueLimit)
        // Each new file is two events: created, and closed after writing.
        for index in 0..<(limit / 2 + 64) {
            let fd = open(folder.path("many/\(index)"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            #expect(fd >= 0)
            close(fd)
        }
        try FileManager.default.createDirectory(atPath: folder.path("late"), withIntermediateDirectories: true)
        let changes = watcher.takeChanges()
        #expect(changes.fullScan)
        #expect(watcher.folderCount == 3)
        try folder.write("late/new.jpg")
        #expect(Self.changes(of: watcher).folderNames == ["late"])
    }

    static var queueLimit: Int? {
        (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// The watch limit (here one set below the kernel's) leaves folders unwatched, and says so.
    @Test func reachingTheWatchLimitIsReported() throws {
        let folder = try Folder(folders: ["a", "b", "c"])
        let watcher = try LibraryWatcher(root: folder.root, watchLimit: 2)
        #expect(watcher.folderCount == 2)
        #expect(watcher.limitReached?.contains("watch limit") == true)
        let unlimited = try LibraryWatcher(root: folder.root)
        #expect(unlimited.limitReached == nil)
    }

    /// The library folder moved away (as an unmount takes it) and back: reported gone, looked
    /// for, then watched again with a full walk asked for.
    @Test func aLibraryThatGoesAwayIsWaitedForAndWatchedAgain() throws {
        let folder = try Folder(folders: ["a"])
        let watcher = try LibraryWatcher(root: folder.root, rootPollInterval: .milliseconds(50))
        let aside = folder.url.appendingPathComponent("aside").path
        try FileManager.default.moveItem(atPath: folder.root, toPath: aside)
        let gone = Self.changes(of: watcher)
        #expect(gone.wentAway && !gone.cameBack)
        #expect(watcher.isAway)
        #expect(watcher.waitForChanges(timeout: .milliseconds(300)).isEmpty)  // still away
        try FileManager.default.moveItem(atPath: aside, toPath: folder.root)
        let back = Self.changes(of: watcher)
        #expect(back.cameBack && back.fullScan)
        #expect(!watcher.isAway)
        #expect(watcher.folderCount == 2)
        try folder.write("a/new.jpg")
        #expect(Self.changes(of: watcher).folderNames == ["a"])
    }
}
