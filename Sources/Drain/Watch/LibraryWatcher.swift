import Synchronization

/// Watches every folder of a library with inotify (`drain --watch`) and says in which folders
/// something changed, so a scan need read only those.
///
/// Folders are watched as the scan walks them: hidden ones (names starting with a dot) only with
/// `includeHidden`, the store's own files never, symbolic links not followed. A folder created
/// (or moved in) later is watched as its event is read, with everything below it, and reported
/// itself, so what was written into it before its watch began is still found; a folder deleted or
/// moved out is no longer watched.
///
/// Two things can make the events incomplete: the kernel's queue overflowing (the events since
/// are lost: `LibraryChanges.fullScan` asks for a full walk, and every folder is watched again) and
/// the user's watch limit (`fs.inotify.max_user_watches`, or `watchLimit`): then `limitReached`
/// says why, and the folders past it are found only by the caller's periodic rescans.
///
/// The library folder vanishing (unmounted, deleted, moved away) is reported (`wentAway`) and
/// then looked for every `rootPollInterval`; it is back once it is a folder again and, if it was a
/// mount point, something is mounted on it again (the empty folder under a mount is not the
/// library). Then every folder is watched again and `cameBack` asks for a full walk.
///
/// Sendable: its state is behind a lock. `takeChanges` never waits; `waitForChanges` blocks
/// (call it from a thread of its own).
public final class LibraryWatcher: Sendable {
    /// The library folder (canonical, absolute).
    public let root: String
    private let rootBytes: [UInt8]
    private let includeHidden: Bool
    private let excluding: Set<String>
    private let watchLimit: Int?
    private let rootPollInterval: Duration
    /// The library folder was a mount point when watching began (its device is not its parent's).
    private let rootWasMountPoint: Bool
    private let inotify: Inotify
    private let state: Mutex<State>

    private struct State {
        /// Watch descriptor → folder (relative bytes), and back.
        var folders: [Int32: [UInt8]] = [:]
        var watches: [[UInt8]: Int32] = [:]
        var rootWatch: Int32 = -1
        var pending = LibraryChanges()
        var limitReached: String?
        var away = false
        var nextRootCheck = ContinuousClock.now
    }

    /// What every folder is watched for.
    static let folderEvents = Inotify.created | Inotify.closedAfterWriting | Inotify.movedTo | Inotify.movedFrom
        | Inotify.deleted | Inotify.attributesChanged | Inotify.deletedSelf | Inotify.movedSelf
        | Inotify.onlyDirectory | Inotify.dontFollow

    /// Starts watching every folder under `root` (canonical, absolute). `excluding` are absolute
    /// paths never watched nor reported (the store's own files, `AssetStore.ownPaths`).
    /// `watchLimit` caps the watches below the kernel's limit (tests of that fallback). Throws
    /// `unavailable` when there is no inotify instance to be had, and `unwatchable` (or
    /// `watchLimit`) when the library folder itself cannot be watched.
    public init(root: String, includeHidden: Bool = false, excluding: Set<String> = [], watchLimit: Int? = nil,
                rootPollInterval: Duration = .seconds(1)) throws(WatchError) {
        self.root = root
        self.rootBytes = Array(root.utf8)
        self.includeHidden = includeHidden
        self.excluding = excluding
        self.watchLimit = watchLimit
        self.rootPollInterval = rootPollInterval
        self.inotify = try Inotify()
        let parent = Array(root.utf8.split(separator: 0x2F, omittingEmptySubsequences: true).dropLast().joined(separator: [0x2F]))
        if let own = WatchSyscalls.identity(of: rootBytes), let above = WatchSyscalls.identity(of: [0x2F] + parent) {
            rootWasMountPoint = own.device != above.device
        } else {
            rootWasMountPoint = false
        }
        var state = State()
        if case .failure(let error) = Self.watchTree(from: [], &state, inotify: inotify, root: rootBytes, includeHidden: includeHidden,
                                                     excluding: excluding, limit: watchLimit, reportNew: false) {
            throw error
        }
        self.state = Mutex(state)
    }

    /// How many folders are watched now.
    public var folderCount: Int { state.withLock { $0.folders.count } }

    /// Why some folders are not watched (the watch limit), or nil when every one is.
    public var limitReached: String? { state.withLock { $0.limitReached } }

    /// Whether the library folder is away now (see `LibraryChanges.wentAway`).
    public var isAway: Bool { state.withLock { $0.away } }

    /// What happened since the last call, without waiting: reads the queued events, watches new
    /// folders, and while the library is away, looks for it when due.
    public func takeChanges() -> LibraryChanges {
        state.withLock { state in
            for event in inotify.readEvents() { handle(event, &state) }
            lookForRoot(&state)
            defer { state.pending = LibraryChanges() }
            return state.pending
        }
    }

    /// Waits up to `timeout` for something to happen, then takes it (empty when nothing did).
    /// Blocks the calling thread.
    public func waitForChanges(timeout: Duration) -> LibraryChanges {
        let deadline = ContinuousClock.now + timeout
        while true {
            let changes = takeChanges()
            let left = deadline - ContinuousClock.now
            if !changes.isEmpty || left <= .zero { return changes }
            let wait = isAway ? min(left, rootPollInterval) : left
            _ = inotify.waitForEvents(milliseconds: Int32(clamping: Int((wait / .milliseconds(1)).rounded(.up))))
        }
    }

    // MARK: Events

    private func handle(_ event: Inotify.Event, _ state: inout State) {
        if event.has(Inotify.queueOverflow) {
            // Events were lost, folders created meanwhile among them: watch every folder again
            // (those already watched keep their watch) and have the caller walk in full.
            state.pending.fullScan = true
            if !state.away { watch(from: [], &state, reportNew: false) }
            return
        }
        guard let folder = state.folders[event.watch] else { return }  // a watch already dropped
        if event.watch == state.rootWatch,
           event.has(Inotify.unmounted | Inotify.deletedSelf | Inotify.movedSelf | Inotify.ignored) {
            goAway(&state)
            return
        }
        if event.has(Inotify.ignored) {
            // The folder was deleted or its file system unmounted: the kernel dropped the watch.
            state.folders[event.watch] = nil
            if state.watches[folder] == event.watch { state.watches[folder] = nil }
            return
        }
        if event.has(Inotify.unmounted | Inotify.deletedSelf | Inotify.movedSelf) {
            // Its parent's events (or the `ignored` that follows) tell the rest.
            return
        }
        guard !event.name.isEmpty else {
            // The folder's own attributes (a chmod that makes it readable, say): read it again.
            if event.has(Inotify.attributesChanged) { state.pending.folders.insert(folder) }
            return
        }
        if !includeHidden && event.name.first == UInt8(ascii: ".") { return }
        let entry = folder.isEmpty ? event.name : folder + [0x2F] + event.name
        if isExcluded(entry) { return }
        state.pending.folders.insert(folder)
        guard event.has(Inotify.isDirectory) else { return }
        if event.has(Inotify.created | Inotify.movedTo) {
            watch(from: entry, &state, reportNew: true)
        } else if event.has(Inotify.movedFrom) {
            // Moved out, or elsewhere in the library: its `movedTo` watches it again under its new name.
            unwatch(under: entry, &state, removing: true)
        } else if event.has(Inotify.deleted) {
            unwatch(under: entry, &state, removing: false)
        }
    }

    /// The library folder is gone: drop every watch and look for it every `rootPollInterval`.
    private func goAway(_ state: inout State) {
        for watch in state.folders.keys { inotify.removeWatch(watch) }
        state.folders = [:]
        state.watches = [:]
        state.rootWatch = -1
        state.away = true
        var gone = LibraryChanges()
        gone.wentAway = true
        state.pending.merge(gone)
        state.nextRootCheck = .now + rootPollInterval
    }

    /// While away, when due: is the library back? Then watch it all again and ask for a full walk.
    private func lookForRoot(_ state: inout State) {
        guard state.away, ContinuousClock.now >= state.nextRootCheck else { return }
        state.nextRootCheck = .now + rootPollInterval
        guard let identity = WatchSyscalls.identity(of: rootBytes), identity.isDirectory else { return }
        if rootWasMountPoint {
            let parent = Array(rootBytes.split(separator: 0x2F, omittingEmptySubsequences: true).dropLast().joined(separator: [0x2F]))
            guard let above = WatchSyscalls.identity(of: [0x2F] + parent), above.device != identity.device else { return }
        }
        state.limitReached = nil
        watch(from: [], &state, reportNew: false)
        guard state.rootWatch >= 0 else { return }
        state.away = false
        var back = LibraryChanges()
        back.cameBack = true
        back.fullScan = true
        state.pending.merge(back)
    }

    private func watch(from folder: [UInt8], _ state: inout State, reportNew: Bool) {
        _ = Self.watchTree(from: folder, &state, inotify: inotify, root: rootBytes, includeHidden: includeHidden,
                           excluding: excluding, limit: watchLimit, reportNew: reportNew)
    }

    /// Watches `start` and every folder below it; with `reportNew`, reports each as changed. Stops
    /// at the watch limit (recording why). Fails only when `start` is the library folder and it
    /// cannot be watched.
    private static func watchTree(from start: [UInt8], _ state: inout State, inotify: Inotify, root: [UInt8],
                                  includeHidden: Bool, excluding: Set<String>, limit: Int?,
                                  reportNew: Bool) -> Result<Void, WatchError> {
        var stack = [start]
        while let folder = stack.popLast() {
            let absolute = folder.isEmpty ? root : root + [0x2F] + folder
            let added: Result<Int32, WatchError>
            if let limit, state.folders.count >= limit, state.watches[folder] == nil {
                added = .failure(WatchError(.watchLimit, "the watch limit of \(limit) folders is reached"))
            } else {
                added = inotify.addWatch(absolute, mask: folderEvents)
            }
            switch added {
            case .success(let watch):
                if let old = state.folders[watch], old != folder, state.watches[old] == watch { state.watches[old] = nil }
                state.folders[watch] = folder
                state.watches[folder] = watch
                if folder.isEmpty { state.rootWatch = watch }
            case .failure(let error) where error.code == .watchLimit:
                state.limitReached = "the inotify watch limit (fs.inotify.max_user_watches, or the one set) is reached: \(state.folders.count) folders are watched, the rest are not"
                return folder.isEmpty ? .failure(error) : .success(())
            case .failure(let error):
                // Gone, or unreadable (the scan reports that): nothing to watch under it.
                if folder.isEmpty { return .failure(error) }
                continue
            }
            if reportNew { state.pending.folders.insert(folder) }
            for name in WatchSyscalls.subfolders(of: absolute) where includeHidden || name.first != UInt8(ascii: ".") {
                let child = folder.isEmpty ? name : folder + [0x2F] + name
                if !isExcluded(child, root: root, excluding: excluding) { stack.append(child) }
            }
        }
        return .success(())
    }

    /// Stops watching `folder` and every folder below it; with `removing`, tells the kernel too
    /// (a deleted folder's watches are gone already).
    private func unwatch(under folder: [UInt8], _ state: inout State, removing: Bool) {
        let prefix = folder + [0x2F]
        for (path, watch) in state.watches where path == folder || path.starts(with: prefix) {
            if removing { inotify.removeWatch(watch) }
            state.watches[path] = nil
            state.folders[watch] = nil
        }
    }

    private func isExcluded(_ relative: [UInt8]) -> Bool {
        Self.isExcluded(relative, root: rootBytes, excluding: excluding)
    }

    private static func isExcluded(_ relative: [UInt8], root: [UInt8], excluding: Set<String>) -> Bool {
        guard !excluding.isEmpty, let path = String(validating: root + [0x2F] + relative, as: UTF8.self) else { return false }
        return excluding.contains(path)
    }
}
