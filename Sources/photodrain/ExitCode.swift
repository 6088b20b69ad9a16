/// The tool's exit statuses (sysexits), the same for every command.
enum ExitCode: Int32 {
    /// Everything asked for was done.
    case success = 0
    /// A failure that is not about the input (I/O, the store, the server).
    case failure = 1
    /// The command was called wrongly.
    case usage = 64
    /// Some input was bad (an undecodable photo); the rest was done.
    case dataError = 65
    /// Work remains (interrupted, or a bounded run ended): run again to continue.
    case workRemains = 75

    static let table: [(code: Int32, meaning: String)] = [
        (0, "done"),
        (1, "failure (I/O, store, server)"),
        (64, "usage error"),
        (65, "data error: a file named on the command line was bad, the rest was done"),
        (75, "work remains or interrupted: run again to continue"),
    ]
}
