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
