import Testing
import SystemSupport

/// The stop rule's figures, pinned: a change to them is a change to how every runner stops.
@Suite struct StopGraceTests {
    @Test func analysesInFlightGetASecondAndTheProcessWaitsTenForWhatWasAbandoned() {
        #expect(StopGrace.inFlight == .seconds(1))
        #expect(StopGrace.runEnds == .milliseconds(1_500))
        #expect(StopGrace.beforeExit == .seconds(10))
        // A caller that leaves a stopping run gives it at least the grace; the process waits longer still.
        #expect(StopGrace.inFlight < StopGrace.runEnds && StopGrace.runEnds < StopGrace.beforeExit)
    }
}
