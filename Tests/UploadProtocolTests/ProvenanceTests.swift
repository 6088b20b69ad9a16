import Testing
import UploadProtocol

/// The `X-Photo-*` encodings shared by client and receiver.
@Suite struct ProvenanceEncodingTests {
    @Test(arguments: [
        ([UInt8]("2024/IMG_0001.JPG".utf8), "2024/IMG_0001.JPG"),
        ([UInt8]("a b%c".utf8), "a%20b%25c"),
        (Array("caf".utf8) + [0xE9] + Array(".jpg".utf8), "caf%E9.jpg"),
        (Array("Zoë\r\n".utf8), "Zo%C3%AB%0D%0A"),
        ([0, 0xFF, 0x2F, 0x2E, 0x2E], "%00%FF/.."),
    ])
    func percentEncodingIsExactAndReversible(bytes: [UInt8], encoded: String) {
        #expect(Provenance.percentEncode(bytes) == encoded)
        #expect(Provenance.percentDecode(encoded) == bytes)
        #expect(encoded.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F })
    }

    @Test(arguments: ["%", "%4", "%GG", "caf\u{E9}", "tab\there"])
    func malformedPercentEncodingIsRefused(text: String) {
        #expect(Provenance.percentDecode(text) == nil)
    }

    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000000000Z"),
        (Int64(1_719_826_200_123_456_789), "2024-07-01T09:30:00.123456789Z"),
        (Int64(951_782_400_000_000_001), "2000-02-29T00:00:00.000000001Z"),
        (Int64(-1), "1969-12-31T23:59:59.999999999Z"),
        (Int64(4_102_444_799_000_000_000), "2099-12-31T23:59:59.000000000Z"),
    ])
    func rfc3339RoundTrips(nanoseconds: Int64, text: String) {
        #expect(Provenance.rfc3339(nanoseconds: nanoseconds) == text)
        #expect(Provenance.nanoseconds(fromRFC3339: text) == nanoseconds)
    }

    @Test func shorterFractionsAndNoneAreRead() {
        #expect(Provenance.nanoseconds(fromRFC3339: "2024-07-01T09:30:00Z") == 1_719_826_200_000_000_000)
        #expect(Provenance.nanoseconds(fromRFC3339: "2024-07-01T09:30:00.5Z") == 1_719_826_200_500_000_000)
        for bad in ["2024-07-01 09:30:00Z", "2024-07-01T09:30:00+02:00", "2024-13-01T09:30:00Z", "2024-07-01T09:30:00.Z", ""] {
            #expect(Provenance.nanoseconds(fromRFC3339: bad) == nil, "\(bad)")
        }
    }

    @Test func headersParseBack() throws {
        let sent = Provenance(path: Array("a/caf".utf8) + [0xE9], mtimeNanoseconds: 42, size: 7, dateTimeOriginal: "2021:03:04 05:06:07")
        let headers = Dictionary(uniqueKeysWithValues: sent.headers.map { ($0.name, $0.value) })
        #expect(headers["x-photo-taken"] == "2021:03:04 05:06:07")
        #expect(try Provenance.parse { headers[$0] } == sent)
        #expect(try Provenance.parse { _ in nil } == nil)
        #expect(throws: Provenance.Malformed.self) { try Provenance.parse { $0 == "x-photo-path" ? "a" : nil } }
    }
}
