import AssetStore
import Foundation
import Testing

/// An S3 destination is its endpoint, bucket and prefix: the same `s3://BUCKET/PREFIX` at another
/// `--s3-endpoint` is another destination (refused without `--new-destination`, and with it the
/// photos are sent again), never "10/10 uploaded" with nothing sent. Moto answers at two
/// endpoints: `127.0.0.1` and `localhost`, the same server under two names.
@Suite(.serialized) struct S3DestinationIdentityCLITests {
    private static let photos = ["chelsea.jpg", "astronaut-orientation-3.jpg", "camera.png"]

    /// A library of three sample photos, its store path and the folder holding both.
    private func library() throws -> (root: URL, library: String, store: String) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("s3id-\(UUID().uuidString)")
        let library = root.appendingPathComponent("library")
        try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
        for photo in Self.photos {
            try FileManager.default.copyItem(at: S3CLITests.repository.appendingPathComponent("SampleImages/\(photo)"),
                                             to: library.appendingPathComponent(photo))
        }
        return (root, library.path, root.appendingPathComponent("store.sqlite").path)
    }

    /// The `summary` line of a `drain --json` run.
    private func summary(_ output: S3CLITests.Output) throws -> [String: Any] {
        let line = try #require(output.stdout.split(separator: "\n").last { $0.contains("\"summary\"") })
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func anotherEndpointIsAnotherDestination() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let (root, library, store) = try library()
        defer { try? FileManager.default.removeItem(at: root) }
        let aws = S3CLITests.environment(moto)
        let to = "s3://\(bucket.configuration.bucket)/c"
        let fast = ["--analysis-size", "96", "--json"]
        let first = "http://127.0.0.1:\(moto.port)", second = "http://localhost:\(moto.port)"

        let drained = try await S3CLITests.run(["drain", library, "--store", store, "--to", to, "--s3-endpoint", first] + fast, aws: aws)
        #expect(drained.status == 0, "\(drained.stderr)")
        #expect(try summary(drained)["uploaded"] as? Int == Self.photos.count)

        // The same bucket and prefix at another endpoint: refused, naming both places.
        let refused = try await S3CLITests.run(["drain", library, "--store", store, "--to", to, "--s3-endpoint", second] + fast, aws: aws)
        #expect(refused.status == 64, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("\(to) at \(first)") && refused.stderr.contains("\(to) at \(second)"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--new-destination"))
        #expect(refused.stderr.contains("pass --to \(to) with the --s3-endpoint"), "\(refused.stderr)")

        // Asked for, it is a destination of its own: every photo is sent there.
        let again = try await S3CLITests.run(["drain", library, "--store", store, "--to", to, "--s3-endpoint", second, "--new-destination"] + fast,
                                             aws: aws)
        #expect(again.status == 0, "\(again.stderr)")
        let sent = try summary(again)
        #expect(sent["uploaded"] as? Int == Self.photos.count && sent["alreadyOnTheServer"] as? Int == 0, "\(sent)")
        let status = try await S3CLITests.run(["status", library, "--store", store], aws: [:])
        #expect(status.stdout.contains("to \(to) at \(second)"), "\(status.stdout)")
        #expect(status.stdout.contains("uploaded elsewhere") && status.stdout.contains("to \(to) at \(first)"), "\(status.stdout)")
        // verify without --to checks the library's destination where it is: the endpoint it names.
        let verify = try await S3CLITests.run(["verify", library, "--store", store], aws: aws)
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        #expect(verify.stdout.contains("\(Self.photos.count) of \(Self.photos.count) photos checked at \(to) at \(second): \(Self.photos.count) present"),
                "\(verify.stdout)")
    }

    /// A store from before the endpoint was part of the destination recorded the bare
    /// `s3://BUCKET/PREFIX`: the first drain naming it takes those uploads as its endpoint's
    /// (nothing sent again), and from then on another endpoint is another destination.
    @Test func aBareDestinationFromAnOlderStoreIsAdopted() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let (root, library, store) = try library()
        defer { try? FileManager.default.removeItem(at: root) }
        let aws = S3CLITests.environment(moto)
        let to = "s3://\(bucket.configuration.bucket)/c"
        let fast = ["--analysis-size", "96", "--json"]
        let first = "http://127.0.0.1:\(moto.port)", second = "http://localhost:\(moto.port)"
        let drained = try await S3CLITests.run(["drain", library, "--store", store, "--to", to, "--s3-endpoint", first] + fast, aws: aws)
        #expect(drained.status == 0, "\(drained.stderr)")
        // The store as an earlier PhotoDrain left it: the destination without its endpoint.
        do {
            let older = try AssetStore(root: library, path: store)
            try older.adoptDestination(to, formerly: "\(to) at \(first)")
            #expect(try older.activeDestination() == to)
            older.checkpoint()
        }

        let adopted = try await S3CLITests.run(["drain", library, "--store", store, "--to", to, "--s3-endpoint", first] + fast, aws: aws)
        #expect(adopted.status == 0, "\(adopted.stderr)")
        #expect(try summary(adopted)["uploaded"] as? Int == 0)
        let status = try await S3CLITests.run(["status", library, "--store", store, "--json"], aws: [:])
        let destinations = try #require((try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["destinations"] as? [[String: Any]])
        #expect(destinations.map { $0["destination"] as? String } == ["\(to) at \(first)"])
        #expect(destinations.first?["uploaded"] as? Int == Self.photos.count)

        let refused = try await S3CLITests.run(["drain", library, "--store", store, "--to", to, "--s3-endpoint", second] + fast, aws: aws)
        #expect(refused.status == 64, "\(refused.stderr)")
    }

    /// wake names the endpoint its jobs go to; an agent given none sends there, and an agent whose
    /// own `--s3-endpoint` leads elsewhere sends nothing, saying where each leads.
    @Test func theAgentSendsAJobWhereWakeNamedIt() async throws {
        let moto = try await MotoServer.shared()
        let bucket = try await moto.makeBucket()
        let (root, library, store) = try library()
        defer { try? FileManager.default.removeItem(at: root) }
        let aws = S3CLITests.environment(moto)
        let first = "http://127.0.0.1:\(moto.port)", second = "http://localhost:\(moto.port)"
        let fast = ["--analysis-size", "96"]

        let to = "s3://\(bucket.configuration.bucket)/w"
        var statuses: [Int32] = []
        for _ in 0..<6 {
            let wake = try await S3CLITests.run(["wake", library, "--store", store, "--to", to, "--s3-endpoint", first] + fast, aws: [:])
            statuses.append(wake.status)
            if wake.status != 75 { break }
            let agent = try await S3CLITests.run(["agent", library, "--store", store, "--exit-when-idle", "0.5"], aws: aws)
            #expect(agent.status == 0, "\(agent.stderr)")
        }
        #expect(statuses.last == 0, "wake statuses: \(statuses)")
        #expect(try await S3CLITests.keys(bucket, prefix: "w/").count == Self.photos.count)

        let other = "s3://\(bucket.configuration.bucket)/x", otherStore = root.appendingPathComponent("other.sqlite").path
        var refusal = ""
        for _ in 0..<3 where refusal.isEmpty {
            let wake = try await S3CLITests.run(["wake", library, "--store", otherStore, "--to", other, "--s3-endpoint", first] + fast, aws: [:])
            #expect(wake.status == 75 || wake.status == 0, "\(wake.stderr)")
            let agent = try await S3CLITests.run(["agent", library, "--store", otherStore, "--exit-when-idle", "0.5", "--s3-endpoint", second],
                                                 aws: aws)
            if agent.stderr.contains("failed") { refusal = agent.stderr }
        }
        #expect(refusal.contains("\(other) at \(first)") && refusal.contains("\(other) at \(second)"), "\(refusal)")
        #expect(try await S3CLITests.keys(bucket, prefix: "x/").isEmpty)
    }
}
