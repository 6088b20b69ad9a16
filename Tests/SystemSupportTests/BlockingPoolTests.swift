import Foundation
import Synchronization
import Testing
@testable import SystemSupport

@Suite struct BlockingPoolTests {
    /// A loop that asks for blocking work one piece after another reuses the pool's threads.
    @Test func workInTurnReusesAThread() async {
        let pool = BlockingPool(keep: 2, linger: 10)
        for i in 0..<200 {
            let got = await withCheckedContinuation { (c: CheckedContinuation<Int, Never>) in pool.run("turn") { c.resume(returning: i) } }
            #expect(got == i)
        }
        // One piece at a time: a thread that ran one runs the next. (A caller resumed inside the
        // piece may ask again before that thread is idle, which starts another now and then; one
        // thread per call, as before the pool, would be 200.)
        #expect(pool.threadCounts.started <= 8)
    }

    /// A caller resumed by the hand-over (as `onOwnThread`'s are) that asks again at once gets the
    /// same thread: the thread counts as free before it resumes anyone. A runner's two analysis
    /// slots must keep to two threads (the allocator keeps a heap of pixels per thread).
    @Test func workHandedOverInTurnRunsOnOneThread() async {
        // Lingering an hour: a test run that starves this task for seconds must not let the thread end.
        let pool = BlockingPool(keep: 0, linger: 3600)
        for i in 0..<200 {
            let got = await withCheckedContinuation { (c: CheckedContinuation<Int, Never>) in
                pool.runThenHandOver("turn", { { c.resume(returning: i) } })
            }
            #expect(got == i)
        }
        #expect(pool.threadCounts.started == 1)
        for i in 0..<200 {
            let got = await onOwnThread("turn", on: pool) { i }
            #expect(got == i)
        }
        #expect(pool.threadCounts.started == 1)
    }

    /// Work that blocks never holds up the work after it: a piece waiting for a later piece gets
    /// it, because a piece with no idle thread gets a new one (a fixed pool would deadlock here).
    @Test func blockedWorkNeverHoldsUpLaterWork() async {
        let pool = BlockingPool(keep: 1, linger: 10)
        let count = 6
        let released = DispatchSemaphore(value: 0)
        let finished = Mutex(0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            // Each of the first pieces waits until the last one runs.
            for _ in 0..<count {
                pool.run("blocked") {
                    released.wait()
                    if finished.withLock({ $0 += 1; return $0 }) == count { done.resume() }
                }
            }
            pool.run("releaser") { for _ in 0..<count { released.signal() } }
        }
        #expect(finished.withLock { $0 } == count)
        #expect(pool.threadCounts.started == count + 1)
    }

    /// Many pieces at once each run exactly once, on as many threads as were needed at once.
    @Test func everyPieceRunsOnce() async {
        let pool = BlockingPool(keep: 4, linger: 10)
        final class Tally: Sendable { let counts = Mutex([Int: Int]()) }
        let tally = Tally()
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<500 {
                group.addTask {
                    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                        pool.run("many") {
                            tally.counts.withLock { $0[i, default: 0] += 1 }
                            c.resume()
                        }
                    }
                }
            }
        }
        #expect(tally.counts.withLock { $0.count } == 500)
        #expect(tally.counts.withLock { $0.values.allSatisfy { $0 == 1 } })
        #expect(pool.threadCounts.started < 500)
    }

    /// Idle threads beyond what the pool keeps end after lingering.
    @Test func idleThreadsBeyondWhatIsKeptEnd() async throws {
        let pool = BlockingPool(keep: 1, linger: 0.05)
        let released = DispatchSemaphore(value: 0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let finished = Mutex(0)
            for _ in 0..<4 {
                pool.run("wide") {
                    released.wait()
                    if finished.withLock({ $0 += 1; return $0 }) == 4 { done.resume() }
                }
            }
            for _ in 0..<4 { released.signal() }
        }
        #expect(pool.threadCounts.started == 4)
        let deadline = ContinuousClock.now + .seconds(5)
        while pool.threadCounts.alive > 1 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(pool.threadCounts.alive == 1)
    }
}
