import Testing
@testable import Drain

@Suite struct SlotPlanTests {
    /// The whole truth table at budget 3: (online, vision work, upload work, bias) -> (analysis, upload).
    @Test(arguments: [
        (true, true, true, SlotBias.uploadFirst, 0, 3),
        (true, true, false, .uploadFirst, 3, 0),
        (true, false, true, .uploadFirst, 0, 3),
        (true, false, false, .uploadFirst, 0, 0),
        (false, true, true, .uploadFirst, 3, 0),    // offline: analyse meanwhile
        (false, true, false, .uploadFirst, 3, 0),
        (false, false, true, .uploadFirst, 0, 0),   // offline with only uploads: wait
        (false, false, false, .uploadFirst, 0, 0),
        (true, true, true, .analysisFirst, 3, 0),
        (true, true, false, .analysisFirst, 3, 0),
        (true, false, true, .analysisFirst, 0, 3),
        (true, false, false, .analysisFirst, 0, 0),
        (false, true, true, .analysisFirst, 3, 0),
        (false, true, false, .analysisFirst, 3, 0),
        (false, false, true, .analysisFirst, 0, 0),
        (false, false, false, .analysisFirst, 0, 0),
    ])
    func truthTable(online: Bool, vision: Bool, upload: Bool, bias: SlotBias, analysisSlots: Int, uploadSlots: Int) {
        let plan = planSlots(budget: 3, online: online, hasVisionWork: vision, hasUploadWork: upload, bias: bias)
        #expect(plan == SlotPlan(analysis: analysisSlots, upload: uploadSlots))
    }

    @Test(arguments: [0, -1])
    func noBudgetNoSlots(budget: Int) {
        #expect(planSlots(budget: budget, online: true, hasVisionWork: true, hasUploadWork: true) == .idle)
    }

    @Test func defaultBiasIsUploadFirst() {
        #expect(planSlots(budget: 2, online: true, hasVisionWork: true, hasUploadWork: true) == SlotPlan(analysis: 0, upload: 2))
    }
}

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy(maxAttempts: 5)

    @Test func transientFailuresRotateThenGiveUp() {
        #expect(policy.decide(.transient(message: "503"), previousAttempts: 0) == .retryLater(attempts: 1, message: "503"))
        #expect(policy.decide(.transient(message: "503"), previousAttempts: 3) == .retryLater(attempts: 4, message: "503"))
        #expect(policy.decide(.transient(message: "503"), previousAttempts: 4) == .markFailed(attempts: 5, message: "503"))
    }

    @Test func permanentFailsAtOnce() {
        #expect(policy.decide(.permanent(message: "403"), previousAttempts: 0) == .markFailed(attempts: 1, message: "403"))
    }

    @Test func deferralsAreFree() {
        for attempts in [0, 4] {
            #expect(policy.decide(.deferred(reason: "offline"), previousAttempts: attempts) == .leavePending)
        }
    }

    @Test func successRecordsTheServerID() {
        #expect(policy.decide(.succeeded(serverID: "obj-1"), previousAttempts: 2) == .markUploaded(serverID: "obj-1"))
    }
}
