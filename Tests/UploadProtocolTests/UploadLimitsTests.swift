import Testing
import UploadProtocol

@Suite struct UploadLimitsTests {
    @Test(arguments: [
        ("max-size=107374182400", UploadLimits(maxSize: 107_374_182_400)),
        ("min-size=0", UploadLimits(minSize: 0)),
        ("max-size=100, min-append-size=10, max-age=3600", UploadLimits(maxSize: 100, minAppendSize: 10, maxAge: 3600)),
        ("expires=60", UploadLimits(maxAge: 60)),
        ("max-size=5;p=1, future-key=?1", UploadLimits(maxSize: 5)),
        // The article's bare number (not a dictionary) is the maximum size.
        ("107374182400", UploadLimits(maxSize: 107_374_182_400)),
        (" 0 ", UploadLimits(maxSize: 0)),
    ])
    func parsesValidDictionaries(field: String, expected: UploadLimits) {
        #expect(UploadLimits(fieldValue: field) == expected)
    }

    @Test(arguments: [
        "-1",                    // a bare number, but negative
        "1.5",                   // a bare decimal
        "107374182400, 5",       // a list of numbers
        "",                      // empty: servers send min-size=0 instead
        "max-size=\"100\"",      // known key, wrong type voids the field
        "max-size=-1",
        "max-size=1.5",
        "Max-Size=1",            // keys are lowercase
        "max-size=1,",           // trailing comma
        "max-size=1 min-size=2", // missing comma
    ])
    func rejectsMalformed(field: String) {
        #expect(UploadLimits(fieldValue: field) == nil)
    }

    @Test func serialisesPerInteropVersion() {
        let limits = UploadLimits(maxSize: 10, maxAge: 60)
        #expect(limits.fieldValue(interopVersion: 6) == "max-size=10, expires=60")
        #expect(limits.fieldValue(interopVersion: 8) == "max-size=10, max-age=60")
        #expect(UploadLimits().fieldValue() == "min-size=0")
        #expect(UploadLimits(fieldValue: limits.fieldValue(interopVersion: 8)) == limits)
    }
}

@Suite struct StructuredFieldTests {
    @Test func integersAndBooleans() {
        #expect(StructuredField.integer("42") == 42)
        #expect(StructuredField.integer(" 0 ") == 0)
        #expect(StructuredField.integer("4x") == nil)
        #expect(StructuredField.integer("1234567890123456") == nil)  // over 15 digits
        #expect(StructuredField.boolean("?1") == true)
        #expect(StructuredField.boolean("?0") == false)
        #expect(StructuredField.boolean("1") == nil)
        #expect(StructuredField.boolean("?2") == nil)
    }

    @Test func completionHeaderPerVersion() {
        #expect(ResumableUpload.completionHeader(complete: true, interopVersion: 3) == ("upload-incomplete", "?0"))
        #expect(ResumableUpload.completionHeader(complete: false, interopVersion: 6) == ("upload-complete", "?0"))
        #expect(ResumableUpload.isComplete(headers: ["upload-incomplete": "?0"]) == true)
        #expect(ResumableUpload.isComplete(headers: ["upload-complete": "?0"]) == false)
        #expect(ResumableUpload.isComplete(headers: [:]) == nil)
    }

    @Test func reprDigestRoundTrip() {
        let digest = (0..<32).map { UInt8($0 * 7 % 256) }
        let field = ResumableUpload.reprDigest(sha256: digest)
        #expect(field.hasPrefix("sha-256=:") && field.hasSuffix(":"))
        #expect(ResumableUpload.sha256(fromReprDigest: field) == digest)
        #expect(ResumableUpload.sha256(fromReprDigest: "sha-256=:AAAA:") == nil)
    }

    @Test(arguments: ["photo.jpg", "Grand-mère été.jpg", "quote\"and\\slash.png"])
    func contentDispositionRoundTrip(name: String) {
        let field = ResumableUpload.contentDisposition(filename: name)
        #expect(field.hasPrefix("inline; "))
        #expect(ResumableUpload.filename(fromContentDisposition: field) == name)
    }

    @Test func base64KnownVectors() {
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.encode(Array("fooba".utf8)) == "Zm9vYmE=")
        #expect(Base64.encode(Array("foob".utf8)) == "Zm9vYg==")
        #expect(Base64.decode("Zm9vYg==") == Array("foob".utf8))
        #expect(Base64.decode("Zm9v!") == nil)
    }
}
