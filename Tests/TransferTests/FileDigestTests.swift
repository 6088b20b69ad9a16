import UploadProtocol
import Foundation
import Synchronization
import Testing
@testable import Transfer

@Suite struct FileDigestTests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ])
    func knownVectors(text: String, expected: String) throws {
        let path = try TemporaryFile.make(bytes: Array(text.utf8))
        defer { TemporaryFile.remove(path) }
        #expect(try FileDigest.sha256Hex(path: path) == expected)
        #expect(Hex.string(try FileDigest.sha256(bytes: Array(text.utf8))) == expected)
    }

    @Test func streamsFilesLargerThanOneChunk() throws {
        let bytes = TemporaryFile.pattern(count: FileDigest.chunkSize * 3 + 17)
        let path = try TemporaryFile.make(bytes: bytes)
        defer { TemporaryFile.remove(path) }
        #expect(try FileDigest.sha256(path: path) == FileDigest.sha256(bytes: bytes))
    }

    @Test func missingFileIsUnreadable() {
        #expect(throws: TransferError.self) { try FileDigest.sha256Hex(path: "/nonexistent/photodrain/file") }
        do {
            _ = try FileDigest.sha256Hex(path: "/nonexistent/photodrain/file")
        } catch {
            #expect(error.code == .fileUnreadable)
            #expect(error.classification == .permanent)
        }
    }

    @Test func backgroundDigestMatchesTheStreamedOneForEveryWaiter() async throws {
        let bytes = TemporaryFile.pattern(count: FileDigest.chunkSize * 2 + 5, seed: 9)
        let path = try TemporaryFile.make(bytes: bytes)
        defer { TemporaryFile.remove(path) }
        let digest = BackgroundDigest(path: path)
        async let first = digest.sha256Hex()
        async let second = digest.sha256Hex()
        let expected = try FileDigest.sha256Hex(path: path)
        #expect(try await first == expected)
        #expect(try await second == expected)
        #expect(try await digest.sha256Hex() == expected)  // after it finished
    }

    @Test func deferredDigestStartsWhenToldOrAwaitedAndOnlyOnce() async throws {
        let runs = Mutex(0)
        let digest = BackgroundDigest(startingNow: false) { () throws(TransferError) -> String in
            runs.withLock { $0 += 1 }
            return String(repeating: "ab", count: 32)
        }
        // Not a timing assertion: an eager start would almost surely have run in this time.
        try await Task.sleep(for: .milliseconds(100))
        #expect(runs.withLock { $0 } == 0)
        #expect(try digest.sha256HexIfFinished() == nil)
        #expect(try await digest.sha256Hex() == String(repeating: "ab", count: 32))  // awaiting starts it
        digest.start()
        #expect(try await digest.sha256Hex() == String(repeating: "ab", count: 32))
        #expect(runs.withLock { $0 } == 1)

        let bytes = TemporaryFile.pattern(count: 1_000, seed: 3)
        let path = try TemporaryFile.make(bytes: bytes)
        defer { TemporaryFile.remove(path) }
        let told = BackgroundDigest(path: path, startingNow: false)
        told.start()
        #expect(try await told.sha256Hex() == FileDigest.sha256Hex(path: path))
    }

    @Test func backgroundDigestOfAMissingFileIsUnreadable() async {
        do {
            _ = try await BackgroundDigest(path: "/nonexistent/photodrain/file").sha256Hex()
            Issue.record("a missing file was hashed")
        } catch {
            #expect(error.code == .fileUnreadable)
        }
    }

    /// `photodrain` must end its hashing threads before `exit()` runs
    /// libcrypto's exit handlers. `stopAll()` returns only once no hashing thread is running, and
    /// a file being hashed stops within a chunk.
    @Test func stopAllEndsRunningDigestsBeforeReturning() async throws {
        let threads = DigestThreads()
        let entered = Mutex(0)
        let endless = BackgroundDigest(threads: threads) { (stop) throws(TransferError) -> String in
            entered.withLock { $0 += 1 }
            while !stop.isCancelled { usleep(1_000) }
            throw TransferError(.cancelled, "stopped")
        }
        while entered.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(1)) }
        // A file of 2,000 chunks: hashing it takes far longer than asking it to stop.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("digest-stop-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("big.jpg").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(count: FileDigest.chunkSize * 2_000)))
        let file = BackgroundDigest(path: path, threads: threads)
        #expect(threads.runningCount >= 1)
        await threads.stopAll()
        #expect(threads.runningCount == 0)
        do {
            _ = try await endless.sha256Hex()
            Issue.record("a stopped digest gave a result")
        } catch {
            #expect(error.code == .cancelled)
        }
        // The file digest either finished before the stop or was cancelled; it is not running.
        do {
            _ = try await file.sha256Hex()
        } catch {
            #expect(error.code == .cancelled)
        }
        await threads.stopAll()  // nothing running: returns at once
    }

    @Test func fileDigestStopsAtTheNextChunkOnceAsked() throws {
        let bytes = TemporaryFile.pattern(count: FileDigest.chunkSize * 3)
        let path = try TemporaryFile.make(bytes: bytes)
        defer { TemporaryFile.remove(path) }
        let stop = CancellationFlag()
        stop.cancel()
        #expect(throws: TransferError(.cancelled, "the hashing was stopped before it finished")) {
            try FileDigest.sha256Hex(path: path, stop: stop)
        }
        #expect(try FileDigest.sha256Hex(path: path, stop: CancellationFlag()) == FileDigest.sha256Hex(path: path))
    }

    @Test func hmacMatchesRFC4231Case2() throws {
        let mac = try FileDigest.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Hex.string(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func hexRoundTrip() {
        #expect(Hex.bytes(fromHex: "00ff7A") == [0, 255, 122])
        #expect(Hex.bytes(fromHex: "abc") == nil)
        #expect(Hex.bytes(fromHex: "zz") == nil)
    }
}
