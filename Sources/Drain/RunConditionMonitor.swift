import Foundation
import Synchronization

/// The run conditions re-checked while a runner runs (`agent`, `drain`, `drain --watch`): every
/// `interval` a thread of its own reads the probes (`read`: `/sys/class/power_supply`,
/// NetworkManager; blocking, so never on the cooperative pool) and keeps the `course`. The loops
/// ask `course` before they start work, and the uploads they start run through `transfer`, so
/// that when the course turns against them the monitor cancels those of files too large to let
/// finish (`RunConditions.Course.cancels`): a cancelled upload's job goes back to pending,
/// uncharged, resumable from the server's offset once the condition clears.
public final class RunConditionMonitor: Sendable {
    /// What the probes say now.
    public struct Readings: Sendable, Equatable {
        public var power: PowerProbe.Source
        public var network: NetworkProbe.Finding
        public init(power: PowerProbe.Source, network: NetworkProbe.Finding) {
            self.power = power
            self.network = network
        }
    }

    private struct Transfer {
        var size: Int64
        var cancel: @Sendable () -> Void
    }

    private struct State {
        var course: RunConditions.Course
        var transfers: [Int: Transfer] = [:]
        var nextID = 0
    }

    public let conditions: RunConditions
    public let interval: Duration
    private let read: @Sendable () -> Readings
    private let state: Mutex<State>
    private let stopped = OneShotLatch<Bool>()
    private let wakeUp = DispatchSemaphore(value: 0)

    /// A monitor whose first course comes from reading the probes now.
    public init(conditions: RunConditions, interval: Duration = .seconds(3), read: @escaping @Sendable () -> Readings) {
        self.conditions = conditions
        self.interval = interval
        self.read = read
        let readings = read()
        state = Mutex(State(course: conditions.course(power: readings.power, network: readings.network)))
    }

    /// The course as of the last check.
    public var course: RunConditions.Course { state.withLock { $0.course } }

    /// Uploads running through `transfer` that the monitor has not cancelled.
    var uploadsInFlight: Int { state.withLock { $0.transfers.count } }

    /// Reads the probes now, keeps the course, and cancels the uploads in flight it cancels.
    /// Returns the course.
    @discardableResult
    public func check() -> RunConditions.Course {
        let readings = read()
        let course = conditions.course(power: readings.power, network: readings.network)
        let cancels = state.withLock { state -> [@Sendable () -> Void] in
            state.course = course
            let doomed = state.transfers.filter { course.cancels(uploadOfSize: $0.value.size) }
            for id in doomed.keys { state.transfers[id] = nil }
            return doomed.values.map(\.cancel)
        }
        for cancel in cancels { cancel() }
        return course
    }

    /// Starts checking every `interval` on a thread of its own, until `stop`.
    public func start() {
        let thread = Thread { [self] in
            let step = interval.components
            let nanoseconds = Int(step.seconds) * 1_000_000_000 + Int(step.attoseconds / 1_000_000_000)
            while !stopped.isCompleted {
                _ = wakeUp.wait(timeout: .now() + .nanoseconds(nanoseconds))
                if stopped.isCompleted { break }
                check()
            }
        }
        thread.name = "photodrain-conditions"
        thread.start()
    }

    public func stop() {
        if stopped.complete(true) { wakeUp.signal() }
    }

    /// Runs `upload`, the transfer of a file of `size` bytes, as a task the monitor cancels when
    /// the course turns against it (at once when it already does). A cancellation of the caller
    /// reaches it too.
    public func transfer<T: Sendable>(size: Int64, _ upload: @escaping @Sendable () async -> T) async -> T {
        let task = Task { await upload() }
        let id = state.withLock { state -> Int? in
            guard !state.course.cancels(uploadOfSize: size) else { return nil }
            defer { state.nextID += 1 }
            state.transfers[state.nextID] = Transfer(size: size, cancel: { task.cancel() })
            return state.nextID
        }
        if id == nil { task.cancel() }
        defer { if let id { state.withLock { _ = $0.transfers.removeValue(forKey: id) } } }
        return await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
    }
}
