/// A test fixture (a helper program) that could not be set up, and why.
struct CLIFixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
