import Foundation
import Testing
@testable import Transfer
import UploadProtocol

/// Provenance travels as user metadata (`x-amz-meta-path`, `-mtime`,
/// `-size`, `-taken`), ASCII only (the path's bytes percent-encoded), within the 2 KB limit.
@Suite struct S3ProvenanceTests {
    static let path: [UInt8] = Array("2024/Café ".utf8) + [0xE9] + Array(" 100%.jpg".utf8)   // a Latin-1 byte too
    static let provenance = Provenance(path: path, mtimeNanoseconds: 1_719_826_200_123_456_789, size: 0,
                                       dateTimeOriginal: "2024:07:01 11:29:58")

    static func expectProvenance(_ headers: [String: String], size: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let encoded = headers[S3Metadata.pathHeader]
        #expect(encoded == "2024/Caf%C3%A9%20%E9%20100%25.jpg", sourceLocation: sourceLocation)
        #expect(encoded.flatMap(Provenance.percentDecode) == path, sourceLocation: sourceLocation)
        #expect(headers[S3Metadata.mtimeHeader] == "2024-07-01T09:30:00.123456789Z", sourceLocation: sourceLocation)
        #expect(headers[S3Metadata.sizeHeader] == String(size), sourceLocation: sourceLocation)
        #expect(headers[S3Metadata.takenHeader] == "2024:07:01 11:29:58", sourceLocation: sourceLocation)
    }

    @Test(arguments: [1_000, 11 * 1024 * 1024])
    func aPutAndAMultipartUploadCarryProvenance(size: Int) async throws {
        let moto = try await MotoServer.shared()
        let uploader = try await moto.makeBucket()
        let file = try TestFile(size: size, seed: 21, name: "photo.jpg")
        defer { file.remove() }
        var metadata = try UploadMetadata(file: file.path, verdictJSON: #"{"label":"keep"}"#)
        var provenance = Self.provenance
        provenance.size = Int64(size)
        metadata.provenance = provenance
        let receipt = try await uploader.upload(file: file.path, metadata: metadata)
        #expect(receipt.resumable == (size > 1_000))
        let key = try #require(receipt.location.flatMap { uploader.configuration.key(fromObjectURI: $0) })
        let head = try await uploader.send("HEAD", key: key)
        #expect(head.status == 200)
        Self.expectProvenance(head.headers, size: size)
        #expect(head.headers[S3Metadata.verdictHeader] == #"{"label":"keep"}"#)
    }

    /// The 2 KB limit counts the provenance: a long verdict falls back to its summary to make
    /// room; a path that alone is too long is refused before anything is sent.
    @Test func provenanceCountsTowardsTheLimit() throws {
        let faces = (0..<24).map { #"{"x":\#($0),"y":1,"w":2,"h":3,"score":0.5,"confirmed":true}"# }.joined(separator: ",")
        let verdict = #"{"label":"keep","faces":[\#(faces)]}"#
        var metadata = UploadMetadata(filename: "a.jpg", sha256Hex: String(repeating: "a", count: 64), verdictJSON: verdict)
        metadata.verdictSummaryJSON = #"{"boxes":24,"faces":24,"label":"keep","summary":true}"#
        let without = try S3Metadata.headers(for: metadata)
        #expect(without.first { $0.name == S3Metadata.verdictHeader }?.value == verdict)
        metadata.provenance = Provenance(path: Array(String(repeating: "folder/", count: 120).utf8) + Array("a.jpg".utf8),
                                         mtimeNanoseconds: 0, size: 1)
        let with = try S3Metadata.headers(for: metadata)
        let total = with.reduce(0) { $0 + $1.name.utf8.count - "x-amz-meta-".utf8.count + $1.value.utf8.count }
        #expect(total <= S3Metadata.limit)
        #expect(with.first { $0.name == S3Metadata.verdictHeader }?.value.contains("\"summary\":true") == true)
        #expect(with.allSatisfy { $0.value.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } })
        metadata.provenance?.path = Array(String(repeating: "é", count: 400).utf8)
        #expect(throws: TransferError.self) { try S3Metadata.headers(for: metadata) }
    }
}
