/// Why the emulator could not be used.
struct MotoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
