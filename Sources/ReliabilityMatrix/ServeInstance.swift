import Foundation
import TestSupport

/// `photodrain serve` on a fixed loopback port, so it can be killed and restarted at the same
/// address (a proxy in front keeps pointing at it).
final class ServeInstance {
    let directory: String
    let port: UInt16
    private let tool: Tool
    private let extra: [String]
    private(set) var child: Child?
    private(set) var starts = 0
    /// Laid over the environment of every later start.
    var environment: [String: String]

    /// What names the store: `--dir DIRECTORY`, or `--store s3://…` and its endpoint.
    private let storeArguments: [String]

    init(tool: Tool, directory: String, extra: [String] = [], environment: [String: String] = [:],
         storeArguments: [String]? = nil) throws {
        self.tool = tool
        self.storeArguments = storeArguments ?? ["--dir", directory]
        self.environment = environment
        self.directory = directory
        self.extra = extra
        guard let port = LoopbackSocket.freePort() else { throw MatrixError("no free loopback port") }
        self.port = port
        try start()
    }

    var uploadsURL: String { "http://127.0.0.1:\(port)/uploads" }

    /// Starts the server and waits until it answers.
    func start() throws {
        starts += 1
        let child = try tool.start(["serve"] + storeArguments + ["--port", String(port)] + extra, name: "serve", environment: environment)
        self.child = child
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if !child.isRunning { break }
            if child.stdout.contains("/uploads") { return }
            usleep(20_000)
        }
        throw MatrixError("photodrain serve did not start on port \(port): \(child.stderr.suffix(400))")
    }

    /// SIGKILLs the server (no chance to tidy up).
    func kill() {
        child?.signal(SIGKILL)
        child?.wait(seconds: 10)
    }

    /// SIGTERMs the server and waits.
    func stop() {
        child?.signal(SIGTERM)
        child?.wait(seconds: 20)
    }

    /// Everything the server logged (one line per request), over every start.
    var log: String { child?.stderr ?? "" }
}

/// A failure of the matrix itself (not of the system under test).
struct MatrixError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
