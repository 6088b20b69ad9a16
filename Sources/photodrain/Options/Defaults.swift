import Foundation

/// Defaults shared by every command, so a flag means the same everywhere.
enum Defaults {
    /// The short side photos are analysed at: 480 px, which a 12 MP JPEG reaches at DCT scale 1/4.
    static let analysisSize = 480
}

/// A byte count for people: `812 B`, `4.1 MB`.
func formatBytes(_ bytes: Int) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"]
    var value = Double(bytes)
    var unit = 0
    while value >= 1000 && unit < units.count - 1 {
        value /= 1000
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
}
