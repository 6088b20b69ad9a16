import Foundation
import PhotoAnalysis
import Testing
@testable import Drain

/// Fake /proc and /sys files for the memory guard.
struct FakeSystem {
    var files: [String: String] = [
        "/proc/meminfo": "MemTotal:       25165824 kB\nMemFree:        1000 kB\n",
        "/proc/self/status": "Name:\tphotodrain\nVmRSS:\t   40960 kB\n",
    ]

    var probe: MemoryProbe {
        var probe = MemoryProbe()
        let files = self.files
        probe.readFile = { files[$0] }
        return probe
    }
}

@Suite struct MemoryGuardTests {
    static let mib = 1 << 20

    @Test func physicalMemoryAndResidentSetWithoutACgroupLimit() {
        let reading = MemoryGuard(probe: FakeSystem().probe).read()
        #expect(reading.limit == 24 << 30)
        #expect(reading.used == 40 * Self.mib)
        #expect(reading.source == "physical memory")
    }

    /// Freed buffers are handed back to the system (so the resident set the guard reads is what
    /// is live) where the guard is tight: a limit given or a cgroup's, or little memory left.
    @Test func freedBuffersAreReturnedOnlyWhereTheGuardIsTight() {
        #expect(!MemoryGuard(probe: FakeSystem().probe).needsFreedBuffersReturned())
        #expect(MemoryGuard(configuredLimit: 8 << 30, probe: FakeSystem().probe).needsFreedBuffersReturned())
        var cgroup = FakeSystem()
        cgroup.files["/proc/self/cgroup"] = "0::/jobs/analyze\n"
        cgroup.files["/sys/fs/cgroup/jobs/analyze/memory.max"] = "\(8 << 30)\n"
        #expect(MemoryGuard(probe: cgroup.probe).needsFreedBuffersReturned())
        var small = FakeSystem()
        small.files["/proc/meminfo"] = "MemTotal:       1048576 kB\n"
        #expect(MemoryGuard(probe: small.probe).needsFreedBuffersReturned())
    }

    @Test func cgroupV2LimitAndCurrentUse() {
        var system = FakeSystem()
        system.files["/proc/self/cgroup"] = "0::/user.slice/photodrain.scope\n"
        system.files["/sys/fs/cgroup/user.slice/photodrain.scope/memory.max"] = "268435456\n"
        system.files["/sys/fs/cgroup/user.slice/photodrain.scope/memory.current"] = "104857600\n"
        system.files["/sys/fs/cgroup/user.slice/memory.max"] = "max\n"
        let reading = MemoryGuard(reserve: 24 * Self.mib, probe: system.probe).read()
        #expect(reading.limit == 256 * Self.mib)
        #expect(reading.used == 100 * Self.mib)
        #expect(reading.headroom == (256 - 100 - 24) * Self.mib)
        #expect(reading.source == "cgroup memory.max")
    }

    @Test func cgroupV2ParentLimitApplies() {
        var system = FakeSystem()
        system.files["/proc/self/cgroup"] = "0::/a/b\n"
        system.files["/sys/fs/cgroup/a/b/memory.max"] = "max\n"
        system.files["/sys/fs/cgroup/a/memory.max"] = "134217728\n"
        system.files["/sys/fs/cgroup/a/memory.current"] = "1048576\n"
        #expect(MemoryGuard(probe: system.probe).read().limit == 128 * Self.mib)
    }

    @Test func cgroupV1Limit() {
        var system = FakeSystem()
        system.files["/proc/self/cgroup"] = "12:cpu,cpuacct:/x\n7:memory:/jobs/wake\n"
        system.files["/sys/fs/cgroup/memory/jobs/wake/memory.limit_in_bytes"] = "209715200\n"
        system.files["/sys/fs/cgroup/memory/jobs/wake/memory.usage_in_bytes"] = "52428800\n"
        let reading = MemoryGuard(probe: system.probe).read()
        #expect(reading.limit == 200 * Self.mib && reading.used == 50 * Self.mib)
        // v1's "no limit" is a huge number: ignored.
        system.files["/sys/fs/cgroup/memory/jobs/wake/memory.limit_in_bytes"] = "9223372036854771712\n"
        #expect(MemoryGuard(probe: system.probe).read().source == "physical memory")
    }

    @Test func configuredLimitWinsWhenSmaller() {
        var system = FakeSystem()
        system.files["/proc/self/cgroup"] = "0::/s\n"
        system.files["/sys/fs/cgroup/s/memory.max"] = "536870912\n"
        let reading = MemoryGuard(configuredLimit: 100 * Self.mib, reserve: 10 * Self.mib, probe: system.probe).read()
        #expect(reading.limit == 100 * Self.mib && reading.source == "--memory-limit")
        #expect(reading.headroom == (100 - 40 - 10) * Self.mib)
    }

    @Test func headroomNeverNegative() {
        let reading = MemoryGuard(configuredLimit: 30 * Self.mib, probe: FakeSystem().probe).read()
        #expect(reading.headroom == 0)
    }

    /// The estimate follows the decoded size; a progressive JPEG holds all its coefficients whatever
    /// the scale. (The guard once also stepped the scale down to fit a budget, which made verdicts
    /// depend on free memory, and a verdict is banked for good. A photo that does not fit is now
    /// deferred.)
    @Test func estimatedCostFollowsTheDecodedSize() {
        let cost2 = AnalysisCost.estimatedBytes(width: 4000, height: 3000, denominator: 2, analysisShortSide: 1200, channels: 3)
        let cost4 = AnalysisCost.estimatedBytes(width: 4000, height: 3000, denominator: 4, analysisShortSide: 1200, channels: 3)
        #expect(cost4 < cost2)
        #expect(cost2 > 2000 * 1500 * 3 * 2)  // the RGB decode and its upright copy
        // A cascade's integral images (sum and squared sum of the analysed image); BlazeFace makes none.
        let blazeFace = AnalysisCost.estimatedBytes(width: 4000, height: 3000, denominator: 2, analysisShortSide: 1200, channels: 3,
                                                  integralImages: false)
        #expect(cost2 - blazeFace == 1600 * 1200 * 24)
        let progressive = AnalysisCost.estimatedBytes(width: 4000, height: 3000, denominator: 8, progressive: true, analysisShortSide: 480)
        #expect(progressive > 36_000_000)
        #expect(AnalysisCost.mebibytes(1) == 1 && AnalysisCost.mebibytes(1 << 20) == 1 && AnalysisCost.mebibytes((1 << 20) + 1) == 2)
    }

    @Test(arguments: [
        // (headroom MiB, cost MiB, slots, maximum, expected page)
        (400, 10, 2, 40, 40),   // plenty: a full page
        (15, 10, 2, 40, 20),    // one at a time fits: the page shrinks
        (9, 10, 2, 40, 0),      // not even one: none
        (10, 10, 1, 40, 40),
    ])
    func pageSizeShrinksUnderPressure(headroom: Int, cost: Int, slots: Int, maximum: Int, expected: Int) {
        #expect(MemoryGuard.pageSize(headroom: headroom * Self.mib, typicalCost: cost * Self.mib, slots: slots, maximum: maximum) == expected)
    }

    @Test func readsThisMachine() {
        let reading = MemoryGuard().read()
        #expect(reading.limit > 0 && reading.used > 0 && reading.used < reading.limit)
    }
}
