import AssetStore
import FaultProxy
import Foundation
import Testing

/// `drain`, `wake` and `agent` against a real `photodrain serve`, killed and rerun.
@Suite(.serialized) struct DrainCLITests {
    static let fast = ["--analysis-size", "96"]

    /// Checks the receiver holds exactly one intact object per photo, with its verdict.
    static func expectOneIntactObjectPerPhoto(_ server: ServeProcess, _ ws: Workspace, photos: [String]) throws {
        let objects = try server.objects()
        #expect(objects.count == photos.count, "receiver holds \(objects.count) objects for \(photos.count) photos")
        let keys = objects.compactMap { $0["idempotencyKey"] as? String }
        #expect(Set(keys).count == keys.count, "an object was stored twice")
        let verdicts = try CLI.run(["verdicts", ws.library, "--store", ws.store])
        var byServerID: [String: [String: Any]] = [:]
        for line in verdicts.lines {
            if let row = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let id = row["server_id"] as? String {
                byServerID[id] = row
            }
        }
        for object in objects {
            let id = try #require(object["id"] as? String)
            let row = try #require(byServerID[id], "object \(id) matches no photo's server id")
            #expect(row["sha256"] as? String == object["sha256"] as? String)
            #expect(row["state"] as? String == "uploaded")
            let verdict = try #require(object["verdict"] as? String)
            #expect(verdict.contains("\"label\""))
        }
    }

    @Test func drainsALibraryAndARerunSendsNothing() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let first = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--json"] + Self.fast)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        try Self.expectOneIntactObjectPerPhoto(server, ws, photos: photos)
        let second = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--json"] + Self.fast)
        #expect(second.status == 0)
        #expect(!second.stdout.contains("\"event\":\"uploaded\""))
    }

    /// The hash pre-check. A second library (another store) holding the same
    /// photos asks the receiver by digest, sends no photo bytes, and records the objects that
    /// the first library's drain stored.
    @Test func aSecondLibraryWithTheSamePhotosSendsNoBytes() throws {
        let a = try Workspace()
        let photos = try a.addSmallSamples()
        let server = try ServeProcess(directory: a.root.appendingPathComponent("received").path)
        let first = try CLI.run(["drain", a.library, "--store", a.store, "--to", server.url, "--json"] + Self.fast)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        try Self.expectOneIntactObjectPerPhoto(server, a, photos: photos)
        let idsBySHA = Dictionary(uniqueKeysWithValues: try server.objects().map {
            (try #require($0["sha256"] as? String), try #require($0["id"] as? String))
        })
        let logBefore = server.running.stderr.split(separator: "\n").count

        let b = try Workspace()
        for photo in photos {
            try b.write(photo, bytes: Array(try Data(contentsOf: URL(fileURLWithPath: a.path(photo)))))
        }
        let second = try CLI.run(["drain", b.library, "--store", b.store, "--to", server.url, "--json"] + Self.fast)
        #expect(second.status == 0, "stderr: \(second.stderr)")
        #expect(second.stdout.components(separatedBy: "\"event\":\"uploaded\"").count - 1 == photos.count)
        // Said as it is, not as if the photos had been sent.
        #expect(second.stdout.components(separatedBy: "\"alreadyStored\":true").count - 1 == photos.count)
        #expect(second.stdout.contains("\"alreadyOnTheServer\":\(photos.count)"))
        var log: [Substring] = []
        for _ in 0..<40 {
            log = Array(server.running.stderr.split(separator: "\n").dropFirst(logBefore))
            if log.filter({ $0.hasPrefix("HEAD /objects/by-digest/") }).count >= photos.count { break }
            usleep(50_000)
        }
        let sending = log.filter { $0.hasPrefix("POST ") || $0.hasPrefix("PUT ") || $0.hasPrefix("PATCH ") }
        #expect(sending.isEmpty, "the second library sent bytes: \(sending)")
        let hits = log.filter { $0.hasPrefix("HEAD /objects/by-digest/") && $0.contains(" 200 digest-hit") }
        #expect(hits.count == photos.count, "receiver log: \(log)")
        #expect(try server.objects().count == photos.count)

        // B's rows carry the ids of the objects A's drain stored.
        let verdicts = try CLI.run(["verdicts", b.library, "--store", b.store])
        var rows = 0
        for line in verdicts.lines {
            guard let row = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let sha = row["sha256"] as? String else { continue }
            rows += 1
            #expect(row["state"] as? String == "uploaded")
            #expect(row["server_id"] as? String == idsBySHA[sha], "row for \(sha.prefix(12)) has another server id")
        }
        #expect(rows == photos.count)
    }

    @Test(arguments: [0.3, 0.8, 1.5, 3.0])
    func killedAtAnyPointEveryPhotoArrivesExactlyOnce(after seconds: Double) throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples(copies: 2)
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        var analysed: [String] = []
        var status: Int32 = -1
        var runs = 0
        while status != 0 && runs < 10 {
            let run = try Running(["drain", ws.library, "--store", ws.store, "--to", server.url, "--json"] + Self.fast)
            if runs < 3 {
                usleep(useconds_t(seconds * 1_000_000))
                run.signal(SIGKILL)
            }
            status = run.wait()
            analysed += run.stdout.split(separator: "\n").filter { $0.contains("\"event\":\"analysed\"") }.map(String.init)
            runs += 1
        }
        #expect(status == 0)
        // A SIGKILL between banking a verdict and printing its line loses the line, never the
        // verdict: so at most one printed analysis per photo (none redone), and every photo has
        // its verdict in the store.
        #expect(analysed.count <= photos.count, "\(analysed.count) analyses for \(photos.count) photos")
        #expect(Set(analysed).count == analysed.count)
        let verdicts = try CLI.run(["verdicts", ws.library, "--store", ws.store])
        #expect(verdicts.lines.count == photos.count)
        try Self.expectOneIntactObjectPerPhoto(server, ws, photos: photos)
    }

    /// A destination that refuses everything is a configuration error. A port
    /// out of range is a usage error (64); a wrong token or a path with no upload endpoint stops
    /// the drain with exit 1, and no photo is failed or charged an attempt.
    @Test(arguments: ["port", "token", "path"])
    func aDestinationThatRefusesEverythingIsAConfigurationError(mistake: String) throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        try "right-token\n".write(toFile: ws.root.appendingPathComponent("token").path, atomically: true, encoding: .utf8)
        try "wrong-token\n".write(toFile: ws.root.appendingPathComponent("wrong").path, atomically: true, encoding: .utf8)
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path,
                                      extra: ["--token-file", ws.root.appendingPathComponent("token").path])
        var arguments = ["drain", ws.library, "--store", ws.store, "--json"] + Self.fast
        switch mistake {
        case "port": arguments += ["--to", "http://127.0.0.1:99999/uploads"]
        case "token": arguments += ["--to", server.url, "--token-file", ws.root.appendingPathComponent("wrong").path]
        default: arguments += ["--to", server.url.replacingOccurrences(of: "/uploads", with: "/nowhere"),
                               "--token-file", ws.root.appendingPathComponent("token").path]
        }
        let run = try CLI.run(arguments)
        #expect(run.status == (mistake == "port" ? 64 : 1), "stderr: \(run.stderr)")
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        if mistake == "port" {
            // Refused before the store was opened; `upload` refuses it as usage too.
            let upload = try CLI.run(["upload", ws.path(photos[0]), "--to", "http://127.0.0.1:99999/uploads"])
            #expect(upload.status == 64, "stderr: \(upload.stderr)")
            return
        }
        let counts = try #require((try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any])
        #expect(counts["failed"] as? Int == 0)
        #expect(counts["uploaded"] as? Int == 0)
        #expect((counts["analyzed"] as? Int ?? 0) + (counts["discovered"] as? Int ?? 0) == photos.count)
        #expect(run.stderr.contains("refused"))
    }

    @Test func offlineDestinationKeepsAnalysingAndChargesNothing() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        // Nothing listens on this port yet.
        let proxyTarget = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let port = try #require(URL(string: proxyTarget.url)?.port)
        let closed = "http://127.0.0.1:\(port + 1)/uploads"
        let offline = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", closed, "--offline-timeout", "1", "--json"] + Self.fast)
        #expect(offline.status == 75)
        #expect(offline.stdout.contains("\"event\":\"offline\""))
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let counts = try #require((try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any])
        #expect(counts["discovered"] as? Int == 0)             // everything analysed meanwhile
        #expect(counts["analyzed"] as? Int == photos.count)     // nothing uploaded
        #expect(counts["failed"] as? Int == 0)
        let verdicts = try CLI.run(["verdicts", ws.library, "--store", ws.store, "--format", "csv"])
        #expect(!verdicts.stdout.contains("connection"))       // no error recorded: a deferral
        // The destination answers again: everything goes.
        let online = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", proxyTarget.url] + Self.fast)
        #expect(online.status == 0)
        try Self.expectOneIntactObjectPerPhoto(proxyTarget, ws, photos: photos)
    }

    @Test func wakeWithAnAgentDrainsTheLibraryReturning75UntilDone() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let agent = try Running(["agent", ws.library, "--store", ws.store, "--slots", "2"])
        defer { agent.signal(SIGTERM); agent.wait() }
        var statuses: [Int32] = []
        for _ in 0..<40 {
            let wake = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", server.url, "--inflight-limit", "5", "--page-size", "4"] + Self.fast)
            statuses.append(wake.status)
            if wake.status != 75 { break }
            usleep(300_000)
        }
        #expect(statuses.last == 0, "wake statuses: \(statuses)")
        #expect(statuses.dropLast().allSatisfy { $0 == 75 })
        try Self.expectOneIntactObjectPerPhoto(server, ws, photos: photos)
    }

    @Test func killedAgentResumesAnUploadFromTheServersOffset() throws {
        let ws = try Workspace()
        // A large undecodable file: it gets an error verdict and is uploaded all the same.
        var big = [UInt8](repeating: 0, count: 24 << 20)
        for i in stride(from: 0, to: big.count, by: 4096) { big[i] = UInt8(i / 4096 % 251) }
        try ws.write("big.jpg", bytes: big)
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let port = try #require(URL(string: server.url)?.port)
        // A slow link, so the kill lands mid-upload.
        let proxy = try FaultProxy(targetPort: UInt16(port), plan: FaultPlan { _ in .delay(milliseconds: 8) })
        defer { proxy.stop() }
        let slowURL = "http://127.0.0.1:\(proxy.port)/uploads"
        // The background runner banks the verdict; wake then hands the upload to the agent.
        #expect(try CLI.run(["analyze", ws.library, "--store", ws.store] + Self.fast).status == 0)
        let wake = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", slowURL, "--json"] + Self.fast)
        #expect(wake.status == 75 && wake.stdout.contains("\"created\":1"), "\(wake.stdout)")
        // Killed again and again mid-upload: each successor resumes where the server got to.
        // The first kill waits for the saved upload URL: a kill between the server's 201 and the
        // save can only start over (the draft has no way to find an upload whose URL was lost),
        // and on a loaded machine a fixed delay sometimes landed there.
        for (round, delay) in ([300_000, 900_000, 700_000] as [useconds_t]).enumerated() {
            let agent = try Running(["agent", ws.library, "--store", ws.store])
            if round == 0 {
                var saved = false
                for _ in 0..<600 where !saved {
                    let store = try AssetStore(root: ws.library, path: ws.store, readOnly: true)
                    saved = try store.job(id: 1)?.resumeURL != nil
                    if !saved { usleep(50_000) }
                }
                #expect(saved, "the agent never saved an upload URL")
            }
            usleep(delay)
            agent.signal(SIGKILL)
            _ = agent.wait()
        }
        let second = try CLI.run(["agent", ws.library, "--store", ws.store, "--exit-when-idle", "0.5"])
        #expect(second.status == 0, "stderr: \(second.stderr)")
        let done = try CLI.run(["wake", ws.library, "--store", ws.store, "--to", slowURL] + Self.fast)
        #expect(done.status == 0, "\(done.stdout)\(done.stderr)")
        let objects = try server.objects()
        #expect(objects.count == 1)
        #expect(objects.first?["size"] as? Int == big.count)
        // Later agents resumed: they asked for the offset instead of starting over.
        #expect(server.running.stderr.contains("HEAD /uploads/"), "receiver log: \(server.running.stderr.suffix(800))")
        let creations = server.running.stderr.split(separator: "\n").filter { $0.hasPrefix("POST /uploads ") }
        #expect(creations.count == 1, "the upload was started over: \(creations)")
    }

    @Test func drainStopsPromptlyOnSIGINT() throws {
        let ws = try Workspace()
        try ws.addSmallSamples(shortSide: 400, copies: 3)
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let drain = try Running(["drain", ws.library, "--store", ws.store, "--to", server.url])
        for _ in 0..<600 where !drain.stderr.contains("photos:") { usleep(50_000) }
        usleep(500_000)
        let sent = Date()
        drain.signal(SIGINT)
        #expect(drain.wait() == 75)
        #expect(Date().timeIntervalSince(sent) < 5)
        #expect(drain.stdout.contains("interrupted by SIGINT"))
        // The summary counts every verdict this run banked, including one that
        // finished after the signal (the store was new, so all of its verdicts are this run's).
        let said = drain.stdout.split(separator: "\n").last { $0.hasPrefix("uploaded ") }
            .flatMap { line in line.split(separator: ",").first { $0.hasPrefix(" analysed ") } }
            .flatMap { Int($0.split(separator: " ")[1]) }
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let counts = try #require((try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any])
        let banked = (counts["total"] as? Int ?? 0) - (counts["discovered"] as? Int ?? 0)
        #expect(said == banked, "summary: \(drain.stdout.suffix(300)); banked \(banked)")
    }

    @Test func wakeStopsPromptlyOnSIGTERM() throws {
        let ws = try Workspace()
        try ws.addSmallSamples(shortSide: 400, copies: 4)
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let wake = try Running(["wake", ws.library, "--store", ws.store, "--to", server.url])
        usleep(1_500_000)
        let sent = Date()
        wake.signal(SIGTERM)
        #expect(wake.wait() == 75)
        #expect(Date().timeIntervalSince(sent) < 10)
        #expect(wake.stdout.contains("SIGTERM"))
    }
}

/// A Live Photo's video, its edit list and its sidecar travel with their photo.
@Suite struct CompanionFilesCLITests {
    @Test func companionsAreUploadedAfterTheirPhotoWithItsVerdict() throws {
        let ws = try Workspace()
        try ws.write("2021/IMG_0001.JPG", bytes: Array(try Data(contentsOf: URL(fileURLWithPath: CLI.sample("hopper.jpg")))))
        try ws.write("2021/IMG_0001.MOV", bytes: [0, 0, 0, 0x14] + Array("ftypqt  ".utf8) + [UInt8](repeating: 7, count: 4096))
        try ws.write("2021/IMG_0001.AAE", bytes: Array("<?xml version=\"1.0\"?><plist/>".utf8))
        try ws.write("2021/IMG_0001.JPG.xmp", bytes: Array("<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"/>".utf8))
        try ws.write("2021/lonely.MOV", bytes: [0, 0, 0, 0x14] + Array("ftypqt  ".utf8) + [UInt8](repeating: 9, count: 64))
        let server = try ServeProcess(directory: ws.root.appendingPathComponent("received").path)
        let drain = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", server.url, "--analysis-size", "96"])
        #expect(drain.status == 0, "\(drain.stderr)")
        let objects = try server.objects()
        #expect(objects.count == 4, "\(objects.map { $0["filename"] ?? "?" })")
        let byName = Dictionary(uniqueKeysWithValues: objects.compactMap { object in (object["filename"] as? String).map { ($0, object) } })
        let photoVerdict = try #require(byName["IMG_0001.JPG"]?["verdict"] as? String)
        #expect(photoVerdict.contains("\"label\":\"faces\""))
        for companion in ["IMG_0001.MOV", "IMG_0001.AAE", "IMG_0001.JPG.xmp"] {
            let verdict = try #require(byName[companion]?["verdict"] as? String, "\(companion) did not arrive")
            #expect(verdict.contains("\"companionOf\":\"2021/IMG_0001.JPG\""), "\(companion): \(verdict)")
            #expect(verdict.contains("\"label\":\"faces\""), "\(companion) does not carry the photo's verdict: \(verdict)")
        }
        // The photo went first: its object is stored before any companion's.
        let stored = server.running.stderr.split(separator: "\n").filter { $0.contains("object=") }
        let ids = byName.mapValues { $0["id"] as? String ?? "" }
        let order = stored.compactMap { line in ids.first { line.contains("object=\($0.value)") }?.key }
        #expect(order.first == "IMG_0001.JPG", "stored in the order \(order)")
        // Not unanalysable: status holds back only the lone video.
        let status = try CLI.run(["status", ws.library, "--store", ws.store, "--json"])
        let counts = try #require((try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["counts"] as? [String: Any])
        #expect(counts["unanalysable"] as? Int == 1, "\(counts)")
        #expect(counts["uploaded"] as? Int == 4, "\(counts)")
    }
}
