import Foundation

/// A process the matrix started: its output goes to files (so a chatty child never blocks on a
/// pipe), and it can be killed by its own pid.
final class Child {
    let process = Process()
    let outputPath: String
    let errorPath: String
    let started = Date()

    /// Starts `executable arguments...`, appending stdout and stderr to `logPrefix.out` / `.err`,
    /// with `environment` laid over the matrix's own.
    init(_ executable: String, _ arguments: [String], logPrefix: String, environment: [String: String] = [:]) throws {
        outputPath = logPrefix + ".out"
        errorPath = logPrefix + ".err"
        for path in [outputPath, errorPath] where !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else { throw MatrixError("cannot create \(path)") }
        }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        out.seekToEndOfFile()
        err.seekToEndOfFile()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        try process.run()
        try? out.close()
        try? err.close()
    }

    var isRunning: Bool { process.isRunning }
    var pid: Int32 { process.processIdentifier }

    /// Sends `signal` if the process is still running; true when it was.
    @discardableResult
    func signal(_ number: Int32) -> Bool {
        guard process.isRunning else { return false }
        return kill(process.processIdentifier, number) == 0
    }

    /// Waits for the exit, up to `seconds` (then SIGKILL); a signal death is 128 + signal.
    @discardableResult
    func wait(seconds: Double = 300) -> Int32 {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }

    var stdout: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }
}

/// The `photodrain` binary under test, and the folder its logs go to.
struct Tool {
    let binary: String
    let logs: String

    /// Starts `photodrain arguments...` in the background; logs under `logs/name`.
    func start(_ arguments: [String], name: String, environment: [String: String] = [:]) throws -> Child {
        try Child(binary, arguments, logPrefix: logs + "/" + name, environment: environment)
    }

    /// Runs `photodrain arguments...` to its end (bounded by `seconds`) and returns the child.
    @discardableResult
    func run(_ arguments: [String], name: String, seconds: Double = 300, environment: [String: String] = [:]) throws -> (status: Int32, child: Child) {
        let child = try start(arguments, name: name, environment: environment)
        let status = child.wait(seconds: seconds)
        return (status, child)
    }
}
