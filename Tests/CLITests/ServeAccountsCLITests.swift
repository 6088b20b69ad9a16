import Foundation
import Testing

/// `photodrain serve accounts ...` and `serve tokens ...` as a user runs them, against a real
/// `photodrain serve`: the token printed once and kept only as a hash, a token added or revoked
/// while serve runs counting within about two seconds, and the book surviving a SIGKILL mid-write.
@Suite(.serialized) struct ServeAccountsCLITests {
    @Test func tokensAddPrintsTheTokenOnceAndKeepsOnlyItsHash() throws {
        let ws = try Workspace()
        let dir = ws.root.appendingPathComponent("received").path
        #expect(try CLI.run(["serve", "--dir", dir, "accounts", "add", "anna"]).status == 0)
        let added = try CLI.run(["serve", "--dir", dir, "tokens", "add", "anna", "anna-phone"])
        #expect(added.status == 0, "\(added.stderr)")
        // The token alone on standard output, so a script can capture it.
        #expect(added.lines.count == 1)
        let token = try #require(added.lines.first)
        #expect(token.range(of: "^pd_[0-9a-f]{64}$", options: .regularExpression) != nil, "\(token)")
        #expect(added.stderr.contains("device anna-phone of account anna, scope upload"))
        #expect(added.stderr.contains("shown this once"))

        let admin = try CLI.run(["serve", "--dir", dir, "tokens", "add", "anna", "anna-laptop", "--scope", "admin"])
        #expect(admin.status == 0)
        let list = try CLI.run(["serve", "--dir", dir, "tokens", "list"])
        #expect(list.status == 0)
        #expect(list.lines.count == 3, "\(list.stdout)")
        #expect(list.stdout.contains("anna-phone") && list.stdout.contains(" upload "))
        #expect(list.stdout.contains("anna-laptop") && list.stdout.contains(" admin "))
        #expect(list.stdout.contains("never"))
        #expect(!list.stdout.contains(token) && !list.stdout.contains(admin.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let accounts = try CLI.run(["serve", "--dir", dir, "accounts", "list"])
        #expect(accounts.stdout.contains("anna") && accounts.stdout.contains(dir + "/accounts/anna"))

        // Only the hash is kept: no file under the directory holds the token's text.
        #expect(Self.filesContaining(token, under: dir).isEmpty)
        let book = try String(contentsOfFile: dir + "/accounts.json", encoding: .utf8)
        #expect(book.contains(Self.sha256Hex(token)))

        // Refusals: an unknown account (1), a name that cannot be a folder (64), a bad scope (64),
        // an unknown id (1), --scope elsewhere (64).
        #expect(try CLI.run(["serve", "--dir", dir, "tokens", "add", "bob", "bob-phone"]).status == 1)
        #expect(try CLI.run(["serve", "--dir", dir, "accounts", "add", "../up"]).status == 64)
        #expect(try CLI.run(["serve", "--dir", dir, "tokens", "add", "anna", "x", "--scope", "root"]).status == 64)
        #expect(try CLI.run(["serve", "--dir", dir, "tokens", "revoke", "00000000"]).status == 1)
        #expect(try CLI.run(["serve", "--dir", dir, "--scope", "read"]).status == 64)
        #expect(try CLI.run(["serve", "--dir", dir, "accounts", "add", "anna"]).status == 1)
    }

    @Test func helpDescribesAccountsTokensAndScopes() throws {
        let help = try CLI.run(["serve", "--help"])
        #expect(help.status == 0)
        for text in ["tokens add ACCOUNT DEVICE", "accounts add NAME", "tokens revoke ID", "--scope SCOPE",
                     "'upload' (the default)", "403", "accounts.json"] {
            #expect(help.stdout.contains(text), "serve --help lacks \(text)")
        }
    }

    /// A token added while serve runs is accepted within about two seconds, without a restart,
    /// and a revoked one refused as soon; neither token's text reaches the log.
    @Test func tokensAddedAndRevokedWhileServeRunsCountWithinTwoSeconds() throws {
        let ws = try Workspace()
        let dir = ws.root.appendingPathComponent("received").path
        #expect(try CLI.run(["serve", "--dir", dir, "accounts", "add", "team"]).status == 0)
        let first = try CLI.run(["serve", "--dir", dir, "tokens", "add", "team", "desk"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let serve = try ServeProcess(directory: dir)
        let probe = serve.url.replacingOccurrences(of: "/uploads", with: "/objects/by-digest/" + String(repeating: "0", count: 64))
        #expect(Self.status(probe, token: first) == 404)
        #expect(Self.status(probe, token: "pd_" + String(repeating: "0", count: 64)) == 401)

        let second = try CLI.run(["serve", "--dir", dir, "tokens", "add", "team", "laptop"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let added = Date()
        let acceptedAfter = Self.waitFor(seconds: 5) { Self.status(probe, token: second) == 404 }
        #expect(acceptedAfter != nil && acceptedAfter! <= 2.5, "accepted after \(String(describing: acceptedAfter)) s")
        _ = added

        let id = try #require(try CLI.run(["serve", "--dir", dir, "tokens", "list"]).lines.first { $0.contains(" laptop ") }?.split(separator: " ").first)
        #expect(try CLI.run(["serve", "--dir", dir, "tokens", "revoke", String(id)]).status == 0)
        let refusedAfter = Self.waitFor(seconds: 5) { Self.status(probe, token: second) == 401 }
        #expect(refusedAfter != nil && refusedAfter! <= 2.5, "refused after \(String(describing: refusedAfter)) s")
        #expect(Self.status(probe, token: first) == 404)

        serve.running.signal(SIGTERM)
        serve.running.wait()
        for token in [first, second] {
            #expect(!serve.running.stderr.contains(token) && !serve.running.stdout.contains(token))
            #expect(Self.filesContaining(token, under: dir).isEmpty)
        }
        #expect(serve.running.stderr.contains("device=team/laptop"))
        // serve wrote when each token was last used; `tokens list` shows it.
        let list = try CLI.run(["serve", "--dir", dir, "tokens", "list"])
        #expect(list.lines.first { $0.contains(" desk ") }.map { !$0.hasSuffix("never") } == true, "\(list.stdout)")
    }

    /// A family: Anna's phone drains with an upload-only token into her space, which `verify`
    /// checks by digest with the same token; `verify --deep` (which reads the bytes back) is
    /// refused with a message naming the read scope, and works with her laptop's read token.
    /// Ben's phone sees none of it.
    @Test func aFamilyDrainsWithDeviceTokensAndTheScopeIsNamedWhenRefused() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let dir = ws.root.appendingPathComponent("received").path
        func token(_ account: String, _ device: String, _ scope: String) throws -> String {
            let path = ws.root.appendingPathComponent(device + ".token").path
            let added = try CLI.run(["serve", "--dir", dir, "tokens", "add", account, device, "--scope", scope])
            try Data(added.stdout.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        for account in ["anna", "ben"] { #expect(try CLI.run(["serve", "--dir", dir, "accounts", "add", account]).status == 0) }
        let phone = try token("anna", "anna-phone", "upload")
        let laptop = try token("anna", "anna-laptop", "read")
        let bens = try token("ben", "ben-phone", "upload")
        let serve = try ServeProcess(directory: dir)

        let drained = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", serve.url, "--token-file", phone, "--analysis-size", "96"])
        #expect(drained.status == 0, "\(drained.stderr)")
        let stored = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/accounts/anna/objects")) ?? []
        #expect(stored.filter { $0.hasSuffix(".json") }.count == photos.count, "\(stored)")
        let sidecar = try #require(stored.first { $0.hasSuffix(".json") })
        #expect(try String(contentsOfFile: dir + "/accounts/anna/objects/" + sidecar, encoding: .utf8).contains("\"device\":\"anna-phone\""))

        let checked = try CLI.run(["verify", ws.library, "--store", ws.store, "--token-file", phone])
        #expect(checked.status == 0, "\(checked.stdout) \(checked.stderr)")
        let deep = try CLI.run(["verify", ws.library, "--store", ws.store, "--token-file", phone, "--deep"])
        #expect(deep.status == 1)
        #expect((deep.stdout + deep.stderr).contains("needs a token with the read scope"), "\(deep.stdout) \(deep.stderr)")
        #expect(!(deep.stdout + deep.stderr).contains(try String(contentsOfFile: phone, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        let deepRead = try CLI.run(["verify", ws.library, "--store", ws.store, "--token-file", laptop, "--deep"])
        #expect(deepRead.status == 0, "\(deepRead.stdout) \(deepRead.stderr)")
        // Ben's phone: Anna's photos are not on the server as far as it can tell.
        let bensView = try CLI.run(["verify", ws.library, "--store", ws.store, "--token-file", bens])
        #expect(bensView.status == 1)
        #expect(bensView.stdout.contains("0 present, \(photos.count) missing"), "\(bensView.stdout)")
    }

    /// An account whose quota is used up refuses the drain as a wrong token would: exit 1, the
    /// quota named, no photo charged; raising the quota lets the next drain send them.
    @Test func aFullQuotaStopsTheDrainAndChargesNothing() throws {
        let ws = try Workspace()
        let photos = try ws.addSmallSamples()
        let dir = ws.root.appendingPathComponent("received").path
        #expect(try CLI.run(["serve", "--dir", dir, "accounts", "add", "kid", "--quota", "1K"]).status == 0)
        let tokenFile = ws.root.appendingPathComponent("tablet.token").path
        try Data(try CLI.run(["serve", "--dir", dir, "tokens", "add", "kid", "tablet"]).stdout.utf8).write(to: URL(fileURLWithPath: tokenFile))
        let serve = try ServeProcess(directory: dir)
        let refused = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", serve.url, "--token-file", tokenFile, "--analysis-size", "96"])
        #expect(refused.status == 1, "\(refused.stdout) \(refused.stderr)")
        #expect(refused.stderr.contains("quota-exceeded") && refused.stderr.contains("1024-byte quota"), "\(refused.stderr)")
        #expect(refused.stderr.contains("No photo was charged"), "\(refused.stderr)")
        #expect(try CLI.run(["serve", "--dir", dir, "accounts", "quota", "kid", "off"]).status == 0)
        // serve reads the book again within a second or two: drain until it is let through (bounded).
        var sent = refused
        for _ in 0..<10 {
            sent = try CLI.run(["drain", ws.library, "--store", ws.store, "--to", serve.url, "--token-file", tokenFile, "--analysis-size", "96"])
            if sent.status == 0 { break }
            usleep(300_000)
        }
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout.contains("uploaded \(photos.count)"), "\(sent.stdout)")
    }

    /// `tokens add` killed at any moment of its write leaves the old book or the new one, whole.
    @Test func theBookSurvivesASIGKILLMidWrite() throws {
        let ws = try Workspace()
        let dir = ws.root.appendingPathComponent("received").path
        #expect(try CLI.run(["serve", "--dir", dir, "accounts", "add", "family"]).status == 0)
        var count = 0
        for round in 0..<24 {
            let adding = try Running(["serve", "--dir", dir, "tokens", "add", "family", "device-\(round)"])
            usleep(UInt32(1_000 * (round % 12) * 3))
            adding.signal(SIGKILL)
            let status = adding.wait()
            let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/accounts.json"))
            let book = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "round \(round): not JSON")
            let tokens = (book["tokens"] as? [Any])?.count ?? -1
            // Killed before the rename: the old book; after it (or finished): one more token.
            #expect(tokens == count || tokens == count + 1, "round \(round): \(tokens) tokens after \(count), exit \(status)")
            count = tokens
        }
        #expect(try CLI.run(["serve", "--dir", dir, "tokens", "list"]).status == 0)
    }

    /// `tokens add` killed at each write, fsync and rename it makes, by strace's fault injection
    /// (SIGKILL on entering the n-th such call, n = 1, 2, ... until a run gets past them all):
    /// every time the book is the old one or the new one, whole JSON; a token is printed only once
    /// the book holds its hash; both outcomes happen (kills before and after the rename). An
    /// in-place write would leave an empty book at the kill on its write. The uninjected run's
    /// trace shows what a kill cannot: the temporary file written and fsync'd before the rename,
    /// and the directory fsync'd after it (what makes the book survive a power cut). The next
    /// edit removes the temporary files the killed ones left.
    @Test func theBookSurvivesASIGKILLAtEachStepOfItsWrite() throws {
        let strace = "/usr/bin/strace"
        try #require(FileManager.default.isExecutableFile(atPath: strace), "this test needs strace (apt-get install strace)")
        let ws = try Workspace()
        let dir = ws.root.appendingPathComponent("received").path
        #expect(try CLI.run(["serve", "--dir", dir, "accounts", "add", "family"]).status == 0)

        // The kills.
        var count = try Self.tokenCount(dir)
        var keptOld = 0, gotNew = 0
        var leftTemporary = false
        func temporaryFiles() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".tmp") } }
        for call in ["write", "fsync", "rename"] {
            var n = 1
            while true {
                let device = "\(call)-\(n)"
                let run = try CLI.run(["serve", "--dir", dir, "tokens", "add", "family", device],
                                      through: [strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=\(call)",
                                                "-e", "inject=\(call):signal=SIGKILL:when=\(n)"])
                let after = try Self.tokenCount(dir)
                let book = try String(contentsOfFile: dir + "/accounts.json", encoding: .utf8)
                let printed = run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                if !printed.isEmpty { #expect(book.contains(Self.sha256Hex(printed)), "\(device): a token printed that the book does not hold") }
                if run.status == 0 {
                    // Past its last such call: the edit is done.
                    #expect(after == count + 1 && book.contains("\"\(device)\""), "\(device)")
                    count = after
                    break
                }
                #expect(after == count || after == count + 1, "\(device): \(after) tokens after \(count)")
                if after == count { keptOld += 1 } else { gotNew += 1 }
                if try !temporaryFiles().isEmpty { leftTemporary = true }
                count = after
                n += 1
                try #require(n <= 40, "\(call) never got through")
            }
        }
        #expect(keptOld > 0 && gotNew > 0, "kills before the rename: \(keptOld), after: \(gotNew)")
        #expect(leftTemporary, "a kill between the temporary file's creation and its rename leaves it")

        // The order of the durable write, from the trace of a run nothing kills.
        let tracePath = ws.root.appendingPathComponent("trace").path
        let traced = try CLI.run(["serve", "--dir", dir, "tokens", "add", "family", "traced"],
                                 through: [strace, "-f", "-qq", "-o", tracePath, "-e", "trace=openat,write,fsync,fdatasync,rename,renameat,renameat2"])
        #expect(traced.status == 0, "\(traced.stderr)")
        let calls = try String(contentsOfFile: tracePath, encoding: .utf8).split(separator: "\n").map { line in
            // "1234  write(7, ...) = 261": drop the thread id and the spaces after it.
            String(line.drop { $0.isNumber }.drop { $0 == " " })
        }
        func index(_ predicate: (String) -> Bool) -> Int? { calls.firstIndex(where: predicate) }
        let opened = try #require(index { $0.hasPrefix("openat(") && $0.contains("/.accounts.json.") && $0.contains(".tmp\"") && $0.contains("O_CREAT") },
                                  "no temporary file opened (\(traced.stderr)):\n\(calls.joined(separator: "\n"))")
        let fd = try #require(calls[opened].split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespaces) })
        let written = try #require(index { $0.hasPrefix("write(\(fd), \"{") })
        let synced = try #require(index { $0.hasPrefix("fsync(\(fd))") || $0.hasPrefix("fdatasync(\(fd))") })
        let renamed = try #require(index { $0.hasPrefix("rename") && $0.contains("/.accounts.json.") && $0.contains("/accounts.json\"") && $0.hasSuffix("= 0") })
        let directory = try #require(calls.indices.first { $0 > renamed && calls[$0].hasPrefix("openat(") && calls[$0].contains("O_DIRECTORY") })
        let directoryFD = try #require(calls[directory].split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespaces) })
        let directorySynced = try #require(calls.indices.first { $0 > directory && calls[$0].hasPrefix("fsync(\(directoryFD))") })
        #expect(opened < written && written < synced && synced < renamed && renamed < directorySynced)
        #expect(!calls.contains { $0.hasPrefix("openat(") && $0.contains("/accounts.json\"") && ($0.contains("O_WRONLY") || $0.contains("O_RDWR")) },
                "the book itself is never opened for writing")

        // Edits after the kills removed what the killed ones left.
        let left = try temporaryFiles()
        #expect(left.isEmpty, "\(left)")
    }

    /// How many tokens the book holds; throws when it is not whole JSON.
    static func tokenCount(_ dir: String) throws -> Int {
        let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/accounts.json"))
        let book = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "the book is not JSON")
        return try #require(book["tokens"] as? [Any], "the book has no tokens").count
    }

    // MARK: Helpers

    /// The status of a GET with the token, by curl.
    static func status(_ url: String, token: String) -> Int? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "-H", "Authorization: Bearer \(token)", url]
        let out = Pipe()
        process.standardOutput = out
        guard (try? process.run()) != nil else { return nil }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Int(String(decoding: data, as: UTF8.self))
    }

    /// Seconds until `condition` held, tried every 100 ms for at most `seconds`; nil if never.
    static func waitFor(seconds: Double, _ condition: () -> Bool) -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < seconds {
            if condition() { return Date().timeIntervalSince(start) }
            usleep(100_000)
        }
        return nil
    }

    /// Every regular file under `root` whose bytes contain `text`.
    static func filesContaining(_ text: String, under root: String) -> [String] {
        let needle = Data(text.utf8)
        let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return files.filter { name in
            guard let data = FileManager.default.contents(atPath: root + "/" + name) else { return false }
            return data.range(of: needle) != nil
        }
    }

    static func sha256Hex(_ text: String) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try? process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try? input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(String(decoding: data, as: UTF8.self).prefix(64))
    }
}
