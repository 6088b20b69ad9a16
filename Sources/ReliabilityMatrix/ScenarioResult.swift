/// One row of the matrix table: a scenario's totals over its runs.
struct ScenarioResult {
    var name: String
    var runs = 0
    var photos = 0
    var faults = 0
    var lost = 0
    var duplicates = 0
    var corrupted = 0
    var fileBytes: Int64 = 0
    /// Bytes sent towards the receiver (request heads included), when a proxy counted them.
    var uploadBytes: Int64 = 0
    /// Checks of the scenario's own that failed (for example "wake was killed for memory").
    var failures: [String] = []
    var notes: [String] = []

    init(name: String) { self.name = name }

    /// Runs `run` once per run of `context` (0, 1, ...) with the scenario's seeded random source,
    /// collecting into one result.
    static func repeated(_ name: String, _ context: MatrixContext,
                         _ run: (Int, inout SeededRandom, inout ScenarioResult) throws -> Void) rethrows -> ScenarioResult {
        var result = ScenarioResult(name: name)
        var random = SeededRandom.forScenario(name, seed: context.seed)
        for index in 0..<context.runs { try run(index, &random, &result) }
        return result
    }

    var passed: Bool { lost == 0 && duplicates == 0 && corrupted == 0 && failures.isEmpty }

    /// Bytes re-sent over file bytes: (bytes sent - file bytes) / file bytes.
    var resentRatio: Double? {
        guard fileBytes > 0, uploadBytes > 0 else { return nil }
        return Double(uploadBytes - fileBytes) / Double(fileBytes)
    }

    mutating func add(_ audit: Audit, photos: Int, fileBytes: Int64, uploadBytes: Int64) {
        runs += 1
        self.photos += photos
        lost += audit.lost
        duplicates += audit.duplicates
        corrupted += audit.corrupted
        self.fileBytes += fileBytes
        self.uploadBytes += uploadBytes
        notes += audit.notes
    }
}
