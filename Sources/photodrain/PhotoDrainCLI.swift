#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Drain
import Synchronization
import SystemSupport
import Transfer

/// The entry point: `photodrain COMMAND [options]`.
@main
struct PhotoDrainCLI {
    static let version = "0.1.0"

    /// Every command, in the order `--help` lists them.
    static var commands: [any Command.Type] { [
        DemoCommand.self,
        InspectCommand.self,
        DetectCommand.self,
        AnalyzeCommand.self,
        DrainCommand.self,
        WakeCommand.self,
        AgentCommand.self,
        StatusCommand.self,
        VerdictsCommand.self,
        PeopleCommand.self,
        VerifyCommand.self,
        FreeSpaceCommand.self,
        RestoreCommand.self,
        ReportCommand.self,
        TrainCommand.self,
        UploadCommand.self,
        ServeCommand.self,
        BenchCommand.self,
        DecodeBenchCommand.self,
        ManCommand.self,
        CompletionsCommand.self,
    ] }

    /// Runs the command on Swift's global executor while the main thread waits for its status.
    /// An `async main` would hand the main thread to `dispatch_main`, which ends it with
    /// `pthread_exit`: that unwinds its stack through the whole unwind table (about 0.9 MB of
    /// the executable made resident in every run, `--help` included) for nothing, as the tool
    /// never runs work on the main queue.
    static func main() {
        // A closed pipe (e.g. `photodrain verdicts | head`) must end the tool quietly.
        signal(SIGPIPE, SIG_IGN)
        let arguments = Array(CommandLine.arguments.dropFirst())
        let status = Mutex(ExitCode.failure)
        let finished = DispatchSemaphore(value: 0)
        Task.detached {
            let code = await run(arguments)
            // exit() runs libcrypto's exit handlers, which free what a hashing thread may still be
            // using: end every background digest first (a failed first file leaves the next one hashing).
            await DigestThreads.shared.stopAll()
            // Likewise an analysis a stopping runner no longer waits for (refused destination, signal).
            await OwnThreads.waitForAll()
            status.withLock { $0 = code }
            finished.signal()
        }
        finished.wait()
        exit(status.withLock { $0 }.rawValue)
    }

    static func run(_ arguments: [String]) async -> ExitCode {
        let console = Console.shared
        guard let first = arguments.first else {
            console.err(overview())
            return .usage
        }
        switch first {
        case "--help", "-h":
            console.out(overview())
            return .success
        case "--version":
            for line in VersionInfo.lines() { console.out(line) }
            return .success
        case "help":
            guard arguments.count > 1 else {
                console.out(overview())
                return .success
            }
            guard let command = command(named: arguments[1]) else {
                console.err("photodrain: unknown command '\(arguments[1])'. See 'photodrain --help'.")
                return .usage
            }
            console.out(command.spec.help())
            return .success
        default:
            break
        }
        guard let command = command(named: first) else {
            console.err("photodrain: unknown command '\(first)'. See 'photodrain --help'.")
            return .usage
        }
        do {
            var parsed = try command.spec.parse(Array(arguments.dropFirst()))
            if parsed.helpRequested {
                console.out(command.spec.help())
                return .success
            }
            if let configuration = try Configuration.load(explicit: parsed.string("config")) {
                configuration.apply(to: &parsed, spec: command.spec)
            }
            return try await command.run(parsed)
        } catch let error as UsageError {
            console.err("photodrain \(command.spec.name): \(error.message)")
            console.err("Usage: photodrain \(command.spec.name) \(command.spec.arguments) [options]. See 'photodrain help \(command.spec.name)'.")
            return .usage
        } catch {
            console.err("photodrain \(command.spec.name): \(error)")
            return .failure
        }
    }

    static func command(named name: String) -> (any Command.Type)? {
        commands.first { $0.spec.name == name }
    }

    static func overview() -> String {
        var lines = [
            "OVERVIEW: photodrain analyses a photo library on this machine and drains it safely to a server.",
            "",
            "USAGE: photodrain COMMAND [options]",
            "",
            "COMMANDS:",
        ]
        let width = (commands.map { $0.spec.name.count }.max() ?? 8) + 2
        for command in commands {
            let name = command.spec.name
            lines.append("  \(name)\(String(repeating: " ", count: width - name.count))\(command.spec.abstract)")
        }
        lines += [
            "",
            "See 'photodrain help COMMAND' for a command's options, examples and exit status.",
            "",
            "EXIT STATUS:",
        ]
        for (code, meaning) in ExitCode.table { lines.append("  \(code)  \(meaning)") }
        return lines.joined(separator: "\n")
    }
}
