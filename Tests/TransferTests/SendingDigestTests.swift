import Testing
@testable import Transfer

/// The digest of a large file built from the bytes its appends send (plus the held-back rest).
@Suite struct SendingDigestTests {
    /// Runs `body` with a temporary file of `count` pattern bytes, its path, and a fresh digest
    /// that `send` feeds with pieces of the file as an append would.
    private func withFile(_ count: Int, seed: UInt32,
                          _ body: (_ path: String, _ send: (Range<Int>) -> Void, _ digest: SendingDigest) throws -> Void) throws {
        let bytes = TemporaryFile.pattern(count: count, seed: seed)
        let path = try TemporaryFile.make(bytes: bytes)
        defer { TemporaryFile.remove(path) }
        let digest = SendingDigest()
        try body(path, { range in bytes[range].withUnsafeBytes { digest.observe($0, at: Int64(range.lowerBound)) } }, digest)
    }

    @Test func prefixSentInPiecesPlusTheRestFromTheFileIsTheFilesDigest() throws {
        try withFile(300_000, seed: 41) { path, send, digest throws in
            send(0..<65_536)
            send(65_536..<131_072)
            send(131_072..<250_000)
            let expected = try FileDigest.sha256Hex(path: path)
            #expect(try digest.sha256Hex(path: path, size: 300_000) == expected)
            #expect(try digest.sha256Hex(path: path, size: 300_000) == expected)  // asked again
        }
    }

    /// A request resumed from an earlier offset sends bytes again: they are not hashed twice.
    @Test func bytesSentAgainAfterAResumeAreHashedOnce() throws {
        try withFile(200_000, seed: 42) { path, send, digest throws in
            send(0..<120_000)
            send(90_000..<100_000)   // entirely before what was hashed
            send(100_000..<150_000)  // straddles it
            send(150_000..<180_000)
            #expect(try digest.sha256Hex(path: path, size: 200_000) == FileDigest.sha256Hex(path: path))
        }
    }

    /// A piece that starts past the hashed prefix cannot continue it: no digest, so the caller
    /// hashes the file on its own. Nothing sent yet gives none either.
    @Test func aGapOrNothingSentGivesNoDigest() throws {
        try withFile(100_000, seed: 43) { path, send, digest throws in
            #expect(try digest.sha256Hex(path: path, size: 100_000) == nil)
            send(0..<10_000)
            send(20_000..<30_000)
            #expect(try digest.sha256Hex(path: path, size: 100_000) == nil)
        }
    }

    @Test func aFileThatShrankIsUnreadable() throws {
        try withFile(50_000, seed: 44) { path, send, digest throws in
            send(0..<40_000)
            do throws(TransferError) {
                _ = try digest.sha256Hex(path: path, size: 60_000)
                Issue.record("a digest was made past the end of the file")
            } catch {
                #expect(error.code == .fileUnreadable)
            }
        }
    }
}
