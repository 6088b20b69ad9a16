import AssetStore
import Foundation
import PhotoDecoding
import Testing

/// TLS as a user with a home server meets it. `photodrain serve` behind Debian's
/// nginx, with a certificate from a private CA. Without `--ca-file` the destination is refused as
/// a configuration mistake, like a wrong token: nothing is charged, the run exits 1 and says how to
/// fix it. With it, every photo arrives byte for byte, those above nginx's 1 MB body limit too.
@Suite(.serialized) struct TLSProxyCLITests {
    static let fast = ["--analysis-size", "96"]
    static let nginxMissing: Comment = "nginx is not installed (Scripts/bootstrap installs Debian's package)"
    /// No CA from the environment the tests run in: the private CA is trusted only when passed.
    static let noInheritedCAs = ["SSL_CERT_FILE": "", "SSL_CERT_DIR": ""]
    /// Runs a drain or wake under a time limit: one that cannot get on (an upload URL nobody
    /// answers looks like a destination away, and is waited for) fails the test, not hangs it.
    static let limited = ["/usr/bin/timeout", "120"]

    /// A home server: `photodrain serve`, nginx terminating TLS in front of it, and the CA that
    /// signed nginx's certificate. Stopped when the test ends.
    struct HomeServer {
        let ca: ThrowawayCA
        let serve: ServeProcess
        let nginx: NginxProxy
        var storage: String { serve.directory }

        init(_ ws: Workspace) throws {
            ca = try ThrowawayCA(directory: ws.root.appendingPathComponent("pki").path)
            serve = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
            let backend = try #require(URL(string: serve.url)?.port)
            nginx = try NginxProxy(prefix: ws.root.appendingPathComponent("nginx").path, certificate: ca.serverCertificate,
                                   key: ca.serverKey, backendPort: backend)
        }
    }

    /// Copies SampleImages into the library, with two photos of noise (which does not compress)
    /// above nginx's 1 MB body limit: one sent whole at creation by default (under 4 MiB), one
    /// created empty and appended (over). Returns the names.
    static func libraryOfSamples(_ ws: Workspace) throws -> [String] {
        let samples = CLI.repository.appendingPathComponent("SampleImages").path
        var names = try FileManager.default.contentsOfDirectory(atPath: samples)
            .filter { $0.hasSuffix(".jpg") || $0.hasSuffix(".png") }.sorted()
        for name in names {
            try FileManager.default.copyItem(atPath: samples + "/" + name, toPath: ws.path(name))
        }
        for (name, width, height) in [("noise-1.png", 800, 600), ("noise-2.png", 1400, 1100)] {
            try ImageEncoder.writePNG(noise(width: width, height: height, seed: UInt64(width)), to: ws.path(name))
            names.append(name)
        }
        let sizes = try names.map { try #require(try FileManager.default.attributesOfItem(atPath: ws.path($0))[.size] as? Int) }
        #expect(sizes.contains { $0 > 1 << 20 && $0 <= 4 << 20 } && sizes.contains { $0 > 4 << 20 }, "sizes \(sizes)")
        return names
    }

    /// An RGB image of seeded noise.
    static func noise(width: Int, height: Int, seed: UInt64) -> Image {
        var state = seed | 1
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for i in pixels.indices {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            pixels[i] = UInt8(truncatingIfNeeded: state >> 24)
        }
        return Image(width: width, height: height, channels: 3, pixels: pixels)
    }

    /// Every photo is on the receiver, byte for byte: the object of its name in the storage
    /// directory holds exactly the photo's bytes.
    static func expectEveryPhotoStored(_ photos: [String], ws: Workspace, server: HomeServer) throws {
        let objects = try server.serve.objects()
        #expect(objects.count == photos.count, "the receiver holds \(objects.count) objects for \(photos.count) photos")
        for photo in photos {
            let object = try #require(objects.first { $0["filename"] as? String == photo }, "\(photo) is not on the receiver")
            let id = try #require(object["id"] as? String)
            let stored = try Data(contentsOf: URL(fileURLWithPath: server.storage + "/objects/" + id))
            #expect(stored == (try Data(contentsOf: URL(fileURLWithPath: ws.path(photo)))), "\(photo) differs on the receiver")
        }
    }

    /// `status --json` counts.
    static func counts(_ ws: Workspace) throws -> [String: Any] {
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        return try #require(report["counts"] as? [String: Any])
    }

    /// The issue's run: `drain` to the home server marked every photo failed for good and said
    /// "finished". Now the certificate failing verification is refused like a wrong token; passed
    /// the CA, the same library drains, every photo byte for byte.
    @Test(.enabled(if: NginxProxy.binary != nil, nginxMissing))
    func drainRefusesAnUnverifiedCertificateThenDrainsWithTheCA() throws {
        let ws = try Workspace()
        let photos = try Self.libraryOfSamples(ws)
        let server = try HomeServer(ws)
        let to = ["--to", server.nginx.uploadURL]

        let refused = try CLI.run(["drain", ws.library, "--store", ws.store] + to + Self.fast, environment: Self.noInheritedCAs,
                                  through: Self.limited)
        #expect(refused.status == 1, "stdout: \(refused.stdout) stderr: \(refused.stderr)")
        #expect(refused.stderr.contains("--ca-file"), "\(refused.stderr)")
        #expect(refused.stderr.contains("certificate could not be verified"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("failed for good"), "\(refused.stderr)")
        let counts = try Self.counts(ws)
        #expect(counts["uploaded"] as? Int == 0 && counts["failed"] as? Int == 0, "\(counts)")
        for asset in try AssetStore(root: ws.library, path: ws.store, readOnly: true).assets() {
            #expect(asset.attempts == 0, "\(asset.path) was charged \(asset.attempts) attempts")
        }

        let drained = try CLI.run(["drain", ws.library, "--store", ws.store] + to + ["--ca-file", server.ca.certificate] + Self.fast,
                                  environment: Self.noInheritedCAs, through: Self.limited)
        #expect(drained.status == 0, "stdout: \(drained.stdout) stderr: \(drained.stderr)")
        #expect(try Self.counts(ws)["uploaded"] as? Int == photos.count)
        try Self.expectEveryPhotoStored(photos, ws: ws, server: server)
        // nginx's body limit was met, and got round: 413s, then appends that fit.
        let log = server.nginx.accessLog
        #expect(log.contains("\" 413 "), "nginx never answered 413: \(log.suffix(3000))")
        #expect(log.contains("\"PATCH /uploads/"), "no append went through nginx: \(log.suffix(3000))")
    }

    /// The extension's way: `agent` without the CA fails its jobs on the certificate, and `wake`
    /// puts them back uncharged, exits 1, and says to give the agent `--ca-file`. An agent given
    /// it (here through the configuration file's `caFile`) uploads them all.
    @Test(.enabled(if: NginxProxy.binary != nil, nginxMissing))
    func wakeReportsTheAgentsUnverifiedCertificateAndAnAgentWithTheCAUploads() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let server = try HomeServer(ws)
        let wake = ["wake", ws.library, "--store", ws.store, "--to", server.nginx.uploadURL] + Self.fast
        // The first wake analyses, the second hands the photos to the agent.
        for _ in 0..<2 { #expect(try CLI.run(wake, environment: Self.noInheritedCAs).status == 75) }
        let agent = ["agent", ws.library, "--store", ws.store, "--exit-when-idle", "0.5"]
        let failing = try CLI.run(agent, environment: Self.noInheritedCAs, through: Self.limited)
        #expect(failing.status == 1 && failing.stderr.contains("tls-failure"), "\(failing.stderr)")

        let refused = try CLI.run(wake, environment: Self.noInheritedCAs)
        #expect(refused.status == 1, "stdout: \(refused.stdout) stderr: \(refused.stderr)")
        #expect(refused.stderr.contains("--ca-file PATH to `photodrain agent`"), "\(refused.stderr)")
        let counts = try Self.counts(ws)
        #expect(counts["uploaded"] as? Int == 0 && counts["failed"] as? Int == 0, "\(counts)")

        let config = ws.root.appendingPathComponent("config.json").path
        try Data(#"{"caFile": "\#(server.ca.certificate)"}"#.utf8).write(to: URL(fileURLWithPath: config))
        var statuses: [Int32] = []
        for _ in 0..<10 {
            let performed = try CLI.run(agent + ["--config", config], environment: Self.noInheritedCAs, through: Self.limited)
            #expect(performed.status == 0, "\(performed.stderr)")
            let status = try CLI.run(wake, environment: Self.noInheritedCAs).status
            statuses.append(status)
            if status != 75 { break }
        }
        #expect(statuses.last == 0, "wake statuses: \(statuses)")
        try Self.expectEveryPhotoStored(photos, ws: ws, server: server)
    }

    /// `upload` refuses the unverified certificate with the same advice, and trusts the CA named
    /// by `SSL_CERT_FILE`, or found in `SSL_CERT_DIR`, as OpenSSL's own tools do.
    @Test(.enabled(if: NginxProxy.binary != nil, nginxMissing))
    func uploadHonoursTheSSLCertEnvironment() throws {
        let ws = try Workspace()
        let server = try HomeServer(ws)
        let upload = ["upload", CLI.sample("hopper.jpg"), "--to", server.nginx.uploadURL]
        let refused = try CLI.run(upload, environment: Self.noInheritedCAs)
        #expect(refused.status == 1 && refused.stdout.contains("tls-failure"), "\(refused.stdout)")
        #expect(refused.stderr.contains("pass --ca-file PATH"), "\(refused.stderr)")

        let viaFile = try CLI.run(upload, environment: ["SSL_CERT_FILE": server.ca.certificate, "SSL_CERT_DIR": ""])
        #expect(viaFile.status == 0, "\(viaFile.stdout)\(viaFile.stderr)")

        // A directory of hashed certificates, as `openssl rehash` (c_rehash) makes it.
        let directory = ws.root.appendingPathComponent("certs").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: server.ca.certificate, toPath: directory + "/home-ca.pem")
        try ThrowawayCA.run(["rehash", directory])
        let viaDirectory = try CLI.run(["upload", CLI.sample("rocket.jpg"), "--to", server.nginx.uploadURL],
                                       environment: ["SSL_CERT_FILE": "", "SSL_CERT_DIR": directory])
        #expect(viaDirectory.status == 0, "\(viaDirectory.stdout)\(viaDirectory.stderr)")
    }

    /// A CA file that is missing, a directory, or no PEM certificate is a usage error naming it,
    /// given as a flag or as the configuration file's `caFile`; nothing is scanned or sent.
    @Test(arguments: ["missing.pem", "a-directory", "not-pem.txt"])
    func anUnusableCAFileIsAUsageErrorNamingIt(name: String) throws {
        let ws = try Workspace()
        try FileManager.default.createDirectory(at: ws.root.appendingPathComponent("a-directory"), withIntermediateDirectories: true)
        try Data("not a certificate\n".utf8).write(to: ws.root.appendingPathComponent("not-pem.txt"))
        let path = ws.root.appendingPathComponent(name).path
        let to = ["--to", "https://127.0.0.1:9/uploads"]
        for command in [["drain", ws.library, "--store", ws.store], ["upload", CLI.sample("hopper.jpg")],
                        ["agent", ws.library, "--store", ws.store, "--exit-when-idle", "0"]] {
            let arguments = command + (command[0] == "agent" ? [] : to)
            let flagged = try CLI.run(arguments + ["--ca-file", path])
            #expect(flagged.status == 64 && flagged.stderr.contains(path), "\(command[0]): \(flagged.stderr)")
            let config = ws.root.appendingPathComponent("config.json").path
            try Data(#"{"caFile": "\#(path)"}"#.utf8).write(to: URL(fileURLWithPath: config))
            let configured = try CLI.run(arguments + ["--config", config])
            #expect(configured.status == 64 && configured.stderr.contains(path), "\(command[0]) with caFile: \(configured.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: ws.store))
    }
}
