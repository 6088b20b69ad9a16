import Foundation

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

    init(tool: Tool, directory: String, extra: [String] = [], environment: [String: String] = [:]) throws {
        self.tool = tool
        self.environment = environment
        self.directory = directory
        self.extra = extra
        self.port = try FreePort.pick()
        try start()
    }

    var uploadsURL: String { "http://127.0.0.1:\(port)/uploads" }

    /// Starts the server and waits until it answers.
    func start() throws {
        starts += 1
        let child = try tool.start(["serve", "--dir", directory, "--port", String(port)] + extra, name: "serve", environment: environment)
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

/// A free loopback port, found by binding port 0 and closing.
enum FreePort {
    static func pick() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw MatrixError("socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw MatrixError("bind() failed") }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: actual.sin_port)
    }
}

/// A failure of the matrix itself (not of the system under test).
struct MatrixError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
