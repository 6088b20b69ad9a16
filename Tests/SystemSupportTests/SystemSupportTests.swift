#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import SystemSupport

/// A fresh temporary folder per test.
private func temporaryFolder() -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("systemsupport-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    return folder
}

private func write(_ bytes: [UInt8], to path: String) {
    let file = fopen(path, "wb")!
    _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
    fclose(file)
}

@Suite struct SHA256Tests {
    @Test("the published test vectors (FIPS 180-2)", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func knownVectors(message: String, expected: String) throws {
        #expect(SHA256.hex(try SHA256.digest(Array(message.utf8))) == expected)
    }

    @Test func aFileHashesAsItsBytesDoAcrossChunkBoundaries() throws {
        let folder = temporaryFolder()
        let bytes = (0..<(SHA256.fileChunk * 3 + 17)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        write(bytes, to: folder + "/f")
        #expect(try SHA256.digest(path: folder + "/f") == SHA256.digest(bytes))
        #expect(try SHA256.hex(path: folder + "/f") == SHA256.hex(SHA256.digest(bytes)))
        let range = try SHA256.digest(path: folder + "/f", offset: 1000, length: Int64(SHA256.fileChunk + 5))
        #expect(range == (try SHA256.digest(Array(bytes[1000..<(1000 + SHA256.fileChunk + 5)]))))
    }

    @Test func aRangePastTheEndIsTruncatedNotAShorterDigest() throws {
        let folder = temporaryFolder()
        write([1, 2, 3], to: folder + "/f")
        #expect(throws: SystemError(.truncated, "the file ended before the range being hashed", path: folder + "/f")) {
            try SHA256.digest(path: folder + "/f", offset: 0, length: 10)
        }
    }

    @Test func askingToStopEndsTheHashing() throws {
        let folder = temporaryFolder()
        write([UInt8](repeating: 9, count: 200_000), to: folder + "/f")
        var asked = 0
        #expect(throws: SystemError.self) {
            try SHA256.digest(path: folder + "/f", shouldStop: { asked += 1; return asked > 1 })
        }
        #expect(asked == 2)
    }

    @Test func aFinishedDigestRefusesMoreBytes() throws {
        let hasher = try SHA256()
        _ = try hasher.finish()
        #expect(throws: SystemError.self) { try hasher.update([1]) }
        #expect(throws: SystemError.self) { try hasher.finish() }
    }

    @Test("HMAC-SHA256 (RFC 4231 test case 2)")
    func hmac() throws {
        let mac = try SHA256.hmac(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(SHA256.hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}

@Suite struct ReadOnlyFileTests {
    @Test func readsAtOffsetsAndStopsAtTheEnd() throws {
        let folder = temporaryFolder()
        write(Array(0..<100), to: folder + "/f")
        let file = try ReadOnlyFile(path: folder + "/f")
        #expect(try file.size() == 100)
        #expect(try file.bytes(at: 90, count: 20) == Array(90..<100))
        #expect(try file.bytes(at: 200, count: 5) == [])
    }

    @Test func aMissingFileADirectoryAndAFIFOFailAtOnce() throws {
        let folder = temporaryFolder()
        #expect(throws: SystemError.self) { try ReadOnlyFile(path: folder + "/missing") }
        do {
            _ = try ReadOnlyFile(path: folder)
            Issue.record("a directory was opened")
        } catch {
            #expect(error.code == .notARegularFile)
        }
        #expect(mkfifo(folder + "/fifo", 0o600) == 0)
        do {
            _ = try ReadOnlyFile(path: folder + "/fifo")
            Issue.record("a FIFO was opened")
        } catch {
            #expect(error.code == .notARegularFile)
        }
    }

    @Test func procfsFilesAreReadToTheirEndThoughTheirSizeIsZero() throws {
        let text = String(decoding: try ReadOnlyFile.contents(of: "/proc/self/status", limit: 1 << 20), as: UTF8.self)
        #expect(text.contains("VmRSS:"))
    }

    @Test func contentsPastTheLimitAreRefused() throws {
        let folder = temporaryFolder()
        write([UInt8](repeating: 1, count: 5000), to: folder + "/f")
        #expect(try ReadOnlyFile.contents(of: folder + "/f", limit: 5000).count == 5000)
        do {
            _ = try ReadOnlyFile.contents(of: folder + "/f", limit: 4999)
            Issue.record("a file past the limit was read")
        } catch {
            #expect(error.code == .tooLarge)
        }
    }

    @Test func aStampChangesWhenTheFileIsRewrittenAndNotWhenItIsRead() throws {
        let folder = temporaryFolder()
        write([1, 2, 3], to: folder + "/f")
        let file = try ReadOnlyFile(path: folder + "/f")
        let before = try file.stamp()
        _ = try file.bytes(at: 0, count: 3)
        #expect(try file.stamp() == before)
        #expect(before.size == 3)
        write([1, 2, 3, 4], to: folder + "/f")
        #expect(try ReadOnlyFile(path: folder + "/f").stamp() != before)
    }
}

@Suite struct SharedHelperTests {
    @Test func markupEscapesTheFiveCharactersHTMLAndXMLReserve() {
        #expect(Markup.escape("<a href='x' title=\"y\">&</a>") == "&lt;a href=&#39;x&#39; title=&quot;y&quot;&gt;&amp;&lt;/a&gt;")
        #expect(Markup.escape("plain ä") == "plain ä")
    }

    @Test func durationsInMillisecondsKeepTheirFraction() {
        #expect(Duration.seconds(2).milliseconds == 2000)
        #expect(Duration.microseconds(1500).milliseconds == 1.5)
    }

    @Test func aModuleSeesAFailureInItsOwnErrorType() {
        struct Own: Error, Equatable { let words: String }
        do {
            _ = try translatingSystemErrors({ Own(words: $0.code.rawValue) }) { () throws(SystemError) in
                try ReadOnlyFile(path: "/nonexistent/systemsupport")
            }
            Issue.record("a missing file was opened")
        } catch {
            #expect(error == Own(words: "unreadable"))
        }
    }
}
