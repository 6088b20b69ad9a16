/// A subcommand of `photodrain`: its spec (for parsing and help) and what it does.
protocol Command {
    static var spec: CommandSpec { get }
    /// Runs with parsed arguments and returns the exit status. Throws `UsageError` for bad values.
    static func run(_ arguments: ParsedArguments) async throws -> ExitCode
}
