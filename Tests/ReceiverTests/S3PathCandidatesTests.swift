import Testing
@testable import Receiver

/// The keys `serve --store … --layout path` tries for a library path (`S3Space.pathCandidates`),
/// as a table: what a directory store does with the same path, within what an S3 key can be.
@Suite struct S3PathCandidatesTests {
    static let sha = String(repeating: "ab", count: 32)
    static let id = "0123456789abcdef0123456789abcdef"

    @Test(arguments: [
        ("2024/IMG_0001.jpg", "files/2024/IMG_0001.jpg", "files/2024/IMG_0001~abababababab.jpg"),
        ("/2024/./IMG_0001.jpg", "files/2024/IMG_0001.jpg", "files/2024/IMG_0001~abababababab.jpg"),
        ("../../etc/passwd", "files/__/__/etc/passwd", "files/__/__/etc/passwd~abababababab"),
        (".hidden", "files/.hidden", "files/.hidden~abababababab"),
        ("Ferien 2023/Strand é.HEIC", "files/Ferien 2023/Strand é.HEIC", "files/Ferien 2023/Strand é~abababababab.HEIC"),
    ])
    func aPathGetsItsKeys(path: String, first: String, second: String) throws {
        let keys = try S3Space.pathCandidates(Array(path.utf8), sha256Hex: Self.sha, id: Self.id).get()
        #expect(keys.count == 3)
        #expect(keys.first == first && keys.dropFirst().first == second)
        #expect(keys.last?.contains("~\(Self.id)") == true)
    }

    @Test(arguments: [
        ([0x61, 0xFF, 0x2E, 0x6A, 0x70, 0x67] as [UInt8], "not UTF-8"),
        (Array("a/\u{0}b.jpg".utf8), "NUL"),
        (Array("./".utf8), "names no file"),
        (Array(String(repeating: "d/", count: 64).appending("x.jpg").utf8), "folders deep"),
        (Array(String(repeating: "n", count: 950).utf8), "too long"),
    ])
    func aPathThatCannotBeAKeyStaysUnderItsID(path: [UInt8], why: String) {
        switch S3Space.pathCandidates(path, sha256Hex: Self.sha, id: Self.id) {
        case .success(let keys): Issue.record("placed at \(keys)")
        case .failure(let problem): #expect(problem.reason.contains(why), "\(problem.reason)")
        }
    }
}
