import AssetStore

/// The values the schedule is asked with and answers in: what the store holds, the slot to start,
/// what to do with nothing running, what a finished slot means, the scan to make.
extension DrainSchedule {
    /// The work waiting in the store, counted before each step.
    struct Work: Equatable {
        var vision: Int
        var upload: Int
        var isEmpty: Bool { vision == 0 && upload == 0 }
    }

    /// A slot to start.
    enum Start: Equatable {
        case upload
        case analysis
        /// A photo too big for a slot's share of the headroom, analysed with nothing else analysing.
        case alone(AssetRecord)
    }

    /// What the loop does when nothing of its own is running.
    enum Idle: Equatable {
        /// End the run.
        case finish(DrainOutcome)
        /// Sleep this long, then look again.
        case wait(Duration)
    }

    /// What a finished slot means for the loop.
    enum Recorded: Equatable {
        case carryOn
        /// The destination stopped answering: say so once.
        case wentOffline(message: String)
        /// End the run (a store failure, a refusal) once the slots in flight are cancelled.
        case end(DrainOutcome)
    }

    /// A scan the loop should make now.
    struct Scan: Equatable {
        /// Folders to read whatever their times say (those the watcher saw change).
        var folders: Set<[UInt8]> = []
        /// A full walk (the watcher lost events, or the library came back).
        var full = false
        /// The number of changed folders, when the scan takes a watcher's batch.
        var batch: Int?
    }
}
