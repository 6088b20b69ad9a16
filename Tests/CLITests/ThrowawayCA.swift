import Foundation

/// A certificate authority made with `openssl` for one test, and a server certificate it signed
/// for 127.0.0.1 and localhost: what a home server behind a TLS proxy is given. Nothing on the
/// machine trusts the CA, so a client verifies the server only when told about it.
struct ThrowawayCA {
    /// The CA's certificate (PEM): what `--ca-file` takes.
    let certificate: String
    /// The server's certificate (PEM) and its key, for the proxy.
    let serverCertificate: String
    let serverKey: String

    static let openssl = "/usr/bin/openssl"

    /// Makes the CA and the server certificate in `directory` (created). Throws when openssl
    /// fails, with what it printed.
    init(directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func file(_ name: String) -> String { directory + "/" + name }
        certificate = file("ca.pem")
        serverCertificate = file("server.pem")
        serverKey = file("server.key")
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.run(["req", "-x509"] + ec + ["-keyout", file("ca.key"), "-out", certificate, "-days", "2",
                      "-subj", "/CN=PhotoDrain throwaway test CA"])
        try Self.run(["req", "-new"] + ec + ["-keyout", serverKey, "-out", file("server.csr"), "-subj", "/CN=localhost"])
        let extensions = file("server.ext")
        try Data("""
            subjectAltName = IP:127.0.0.1, DNS:localhost
            basicConstraints = CA:FALSE
            extendedKeyUsage = serverAuth

            """.utf8).write(to: URL(fileURLWithPath: extensions))
        try Self.run(["x509", "-req", "-in", file("server.csr"), "-CA", certificate, "-CAkey", file("ca.key"),
                      "-CAcreateserial", "-out", serverCertificate, "-days", "2", "-extfile", extensions])
    }

    /// Runs `openssl arguments...`; throws with its output when it fails.
    static func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CLIFixtureError("openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(String(decoding: printed, as: UTF8.self))")
        }
    }
}
