import Foundation
import SystemSupport

/// What one scrub pass did (`ReceiverServer.scrubOnce`, and the background passes' log line).
public struct ScrubReport: Sendable, Equatable {
    /// Objects whose bytes were hashed whole and found to be theirs.
    public var intact = 0
    /// Bytes hashed.
    public var bytes: Int64 = 0
    /// Objects found corrupt and moved to `quarantine/`, by id.
    public var corrupt: [String] = []
    /// Objects that could not be read now (kept, checked again next pass), and the first error.
    public var unchecked = 0
    public var firstError: ReceiverError?
    /// The pauses the pacing asked for, in all.
    public var paused: Duration = .zero
    /// Whether the pass was stopped before it went through every object.
    public var stopped = false

    public init() {}
}

/// Keeps a scrub pass at or under a rate: after each piece hashed, how long to wait so that the
/// bytes hashed since the pass began are never more than the rate allows for the time passed.
/// A pure value, so its arithmetic is tested without waiting.
public struct ScrubPacer: Sendable, Equatable {
    /// The most bytes per second.
    public let bytesPerSecond: Int64
    /// Bytes hashed since the pass began.
    public private(set) var bytes: Int64 = 0

    public init(bytesPerSecond: Int64) {
        self.bytesPerSecond = max(1, bytesPerSecond)
    }

    /// Counts `count` more bytes hashed and returns the pause that keeps the pass at the rate,
    /// `elapsed` being the time since the pass began (pauses included): the time the bytes so
    /// far are due at the rate, less `elapsed`, and zero when the pass is behind.
    public mutating func delay(afterHashing count: Int64, elapsed: Duration) -> Duration {
        bytes += count
        let due = Duration.nanoseconds(Int64((Double(bytes) / Double(bytesPerSecond) * 1e9).rounded(.up)))
        return due > elapsed ? due - elapsed : .zero
    }
}

/// The receiver's scrub, on a thread of its own (`ReceiverServer` starts it unless
/// `scrubBytesPerSecond` is 0): every stored object's bytes hashed again, at most
/// `scrubBytesPerSecond`, to find what changes no stamp (bit rot under the file system), which
/// the stamp check before each answer cannot see. A corrupt object is moved to `quarantine/` as
/// a request would move it (`UploadStore+Integrity.swift`).
///
/// The first pass begins at start; each next one `scrubInterval` after the previous one began,
/// or as soon as it ends when it took longer. A pass holds no lock while it hashes (the index
/// lock only for a sidecar rewrite or a move), so uploads never wait for it; it stops within one
/// `UploadStore.checkSlice` once `ReceiverServer.stop()` pokes the wake pipe.
final class ObjectScrubber: Sendable {
    private let spaces: AccountSpaces
    private let configuration: ReceiverConfiguration

    init(spaces: AccountSpaces, configuration: ReceiverConfiguration) {
        self.spaces = spaces
        self.configuration = configuration
    }

    /// Runs passes until `wake` becomes readable; returns at once when the scrub is off. Call it
    /// on a thread of its own.
    func run(until wake: Int32) {
        let rate = configuration.scrubBytesPerSecond
        guard rate > 0 else { return }
        let clock = ContinuousClock()
        while true {
            let began = clock.now
            let report = pass(bytesPerSecond: rate, elapsed: { clock.now - began }, wait: { pause in
                (try? Syscalls.waitReadable(wake, timeoutMilliseconds: Int32(clamping: Int(pause.milliseconds.rounded(.up))))) ?? true
            })
            let seconds = Double((clock.now - began).milliseconds) / 1000
            var line = "scrub: \(report.intact + report.corrupt.count) object(s), \(report.bytes) bytes hashed in \(String(format: "%.1f", seconds)) s"
            if !report.corrupt.isEmpty { line += "; corrupt, moved to quarantine/: \(report.corrupt.joined(separator: " "))" }
            if report.unchecked > 0, let error = report.firstError { line += "; \(report.unchecked) could not be read: \(error)" }
            if report.stopped { line += " (stopped)" }
            configuration.log(line)
            if report.stopped { return }
            let next = max(0, configuration.scrubInterval - seconds)
            if (try? Syscalls.waitReadable(wake, timeoutMilliseconds: Int32(clamping: Int((next * 1000).rounded(.up))))) ?? true { return }
        }
    }

    /// One pass over every object stored when it begins, every account's (`AccountSpaces`), each
    /// account's oldest first. `bytesPerSecond` paces it
    /// (nil: as fast as the disk goes); `elapsed` is the time since the pass began; `wait` is
    /// handed each pause the pacing asks for (`.zero` between objects, to look for a stop) and
    /// returns true to stop the pass.
    func pass(bytesPerSecond: Int64?, elapsed: () -> Duration, wait: (Duration) -> Bool) -> ScrubReport {
        var report = ScrubReport()
        var pacer = bytesPerSecond.map { ScrubPacer(bytesPerSecond: $0) }
        for space in spaces.all {
            scrub(space.store, into: &report, pacer: &pacer, elapsed: elapsed, wait: wait)
            if report.stopped { break }
        }
        return report
    }

    /// One account's store's part of a pass (every account's objects are paced as one pass).
    private func scrub(_ store: UploadStore, into report: inout ScrubReport, pacer: inout ScrubPacer?,
                       elapsed: () -> Duration, wait: (Duration) -> Bool) {
        let objects: [StoredObject]
        do {
            objects = try store.sidecars()
        } catch {
            report.unchecked += 1
            if report.firstError == nil { report.firstError = error }
            return
        }
        for object in objects {
            if wait(.zero) {
                report.stopped = true
                break
            }
            let check = store.checkContent(of: object, rehash: true) { count in
                report.bytes += count
                guard let delay = pacer?.delay(afterHashing: count, elapsed: elapsed()), delay > .zero else { return true }
                report.paused += delay
                return !wait(delay)
            }
            switch check {
            case .intact(let checked):
                report.intact += 1
                if checked.contentStamp != object.contentStamp { store.recordStamp(of: checked) }
            case .missing:
                continue
            case .corrupt(let reason):
                if store.quarantineLogged(object, reason: reason) != nil { report.corrupt.append(object.id) }
            case .unchecked(let error):
                if report.stopped || wait(.zero) {
                    report.stopped = true
                    return
                }
                report.unchecked += 1
                if report.firstError == nil { report.firstError = error }
            }
        }
    }
}
