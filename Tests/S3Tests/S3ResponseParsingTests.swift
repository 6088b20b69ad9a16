import Foundation
import SystemSupport
import Testing
@testable import Transfer

/// Reading S3's XML answers and classifying its errors for the retry policy.
@Suite struct S3ResponseParsingTests {
    @Test func listPartsResultIsRead() {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>b</Bucket><Key>k</Key>
            <UploadId>XXBsb2FkIElEIGZvciBlbHZpbmcncyVcdS1tb3ZpZS5tMnRzEEEwbG9hZA</UploadId>
            <Part><PartNumber>1</PartNumber><ETag>&quot;7778aef83f66abc1fa1e8477f296d394&quot;</ETag><Size>5242880</Size></Part>
            <Part><PartNumber>3</PartNumber><ETag>"aaaa"</ETag><Size>12</Size></Part>
            <IsTruncated>true</IsTruncated><NextPartNumberMarker>3</NextPartNumberMarker></ListPartsResult>
            """
        let text = Substring(body)
        let parts = S3XML.elements("Part", in: text)
        #expect(parts.count == 2)
        #expect(S3XML.value("ETag", in: parts[0]) == "\"7778aef83f66abc1fa1e8477f296d394\"")
        #expect(S3XML.value("PartNumber", in: parts[1]) == "3")
        #expect(S3XML.value("IsTruncated", in: text) == "true")
        #expect(S3XML.value("NextPartNumberMarker", in: text) == "3")
        #expect(S3XML.value("UploadId", in: text)?.hasPrefix("XXBsb2") == true)
        #expect(S3XML.value("Missing", in: text) == nil)
    }

    @Test func entitiesAndEmptyElements() {
        #expect(S3XML.decodeEntities("a &amp; b &lt;c&gt; &#65;&#x42; &bogus; &") == "a & b <c> AB &bogus; &")
        #expect(S3XML.elements("Prefix", in: "<R><Prefix/><Prefix>x</Prefix></R>") == ["", "x"])
        #expect(Markup.escape("<a & \"b\">") == "&lt;a &amp; &quot;b&quot;&gt;")  // the ETags of CompleteMultipartUpload
    }

    @Test func errorBodiesKeepOnlyASanitisedCode() {
        let body = Array("<Error><Code>Signature<b>DoesNotMatch</Code><Message>secret stuff</Message></Error>".utf8)
        #expect(S3Failure.errorCode(in: body) == "SignaturebDoesNotMatch")
        let error = S3Failure.error(status: 403, body: body, operation: "PutObject")
        #expect(!error.message.contains("secret stuff"))
        #expect(S3Failure.errorCode(in: Array("<CompleteMultipartUploadResult/>".utf8)) == nil)
    }

    /// 403 signature and key errors are permanent; 5xx, SlowDown and request timeouts transient.
    @Test(arguments: [
        (403, "SignatureDoesNotMatch", TransferError.Code.unauthorized, TransferError.Classification.permanent),
        (403, "InvalidAccessKeyId", .unauthorized, .permanent),
        (403, "AccessDenied", .unauthorized, .permanent),
        (400, "ExpiredToken", .unauthorized, .permanent),
        (503, "SlowDown", .rateLimited, .transient),
        (503, nil, .serverError, .transient),
        (500, "InternalError", .serverError, .transient),
        (200, "InternalError", .serverError, .transient),
        (502, nil, .serverError, .transient),
        (400, "RequestTimeout", .requestTimeout, .transient),
        (404, "NoSuchBucket", .notFound, .permanent),
        (404, "NoSuchUpload", .notFound, .transient),
        (400, "EntityTooSmall", .rejected, .permanent),
        (400, "MetadataTooLarge", .rejected, .permanent),
    ] as [(Int, String?, TransferError.Code, TransferError.Classification)])
    func classification(status: Int, code: String?, expected: TransferError.Code, classification: TransferError.Classification) {
        let body = code.map { Array("<?xml version=\"1.0\"?><Error><Code>\($0)</Code><Message>m</Message></Error>".utf8) } ?? []
        let error = S3Failure.error(status: status, body: body, operation: "UploadPart")
        #expect(error.code == expected)
        #expect(error.classification == classification)
        #expect(error.httpStatus == status)
        #expect(error.message.hasPrefix("UploadPart: S3 answered \(status)"))
    }

    @Test(arguments: [
        "{\"label\":\"keep\",\"faces\":[]}",
        "{\"label\":\"Zoë\",\"note\":\"日本\"}",
        "{\"a\":\"tab\\there\"}",
        "{\"nl\":\"x\ny\"}",
    ])
    func metadataIsASCIIAndRoundTrips(value: String) {
        let encoded = S3Metadata.encode(value)
        #expect(encoded.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F })
        #expect(S3Metadata.decode(encoded) == value)
        let plain = value.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
        #expect(encoded.hasPrefix("=?UTF-8?B?") == !plain)
    }

    @Test func aVerdictOverTwoKilobytesGoesAsItsSummaryAndMoreIsRefused() throws {
        let face = #"{"confirmed":true,"probability":0.9,"region":{"detectorScore":0.8,"height":40,"keypoints":[1,2,3,4,5,6,7,8,9,10,11,12],"levels":2,"neighbors":5,"width":30,"x":10,"y":20}}"#
        let group = #"{"detector":"blazeface-full-range@e5b08c53","faces":["# + Array(repeating: face, count: 24).joined(separator: ",")
            + #"],"label":"faces","model":"face-verdict@d4a8a7fc","score":0.9,"version":1}"#
        #expect(group.utf8.count > 2048)
        // The summary is made by whoever knows the verdict's type (FaceAnalysis's `Verdict.summary`,
        // pinned in VerdictSummaryTests); S3 sends it as it is.
        let summary = #"{"boxes":24,"detector":"blazeface-full-range@e5b08c53","faces":24,"label":"faces","model":"face-verdict@d4a8a7fc","score":0.9,"summary":true,"version":1}"#
        var metadata = UploadMetadata(filename: "a.jpg", sha256Hex: String(repeating: "0", count: 64), verdictJSON: group)
        #expect(throws: TransferError.self) { try S3Metadata.headers(for: metadata) }
        metadata.verdictSummaryJSON = summary
        let sent = try #require(try S3Metadata.headers(for: metadata).first { $0.name == S3Metadata.verdictHeader }?.value)
        #expect(sent == summary)
        // A name that alone overflows the limit cannot be helped.
        var long = UploadMetadata(filename: String(repeating: "n", count: 2100) + ".jpg", sha256Hex: String(repeating: "0", count: 64), verdictJSON: group)
        long.verdictSummaryJSON = summary
        #expect(throws: TransferError.self) { try S3Metadata.headers(for: long) }
        let small = UploadMetadata(filename: "ä.jpg", sha256Hex: String(repeating: "0", count: 64), verdictJSON: "{}")
        let headers = try S3Metadata.headers(for: small)
        #expect(headers.first { $0.name == S3Metadata.filenameHeader }?.value == "=?UTF-8?B?w6QuanBn?=")
    }

    @Test func checkpointStoredFormRoundTrips() throws {
        let plain = UploadCheckpoint(location: "http://h/u/1", offset: 5, interopVersion: 6)
        #expect(plain.storedForm == "http://h/u/1")
        #expect(UploadCheckpoint(storedForm: plain.storedForm, confirmedOffset: 5, interopVersion: 6) == plain)
        let multipart = UploadCheckpoint(location: "s3://b/p/k.jpg", offset: 10, interopVersion: 0, uploadID: "id/1+",
                                         partSize: 5_242_880, parts: [S3Part(number: 1, etag: "\"e\"", size: 10)])
        #expect(multipart.storedForm.hasPrefix("{"))
        #expect(UploadCheckpoint(storedForm: multipart.storedForm, confirmedOffset: 0, interopVersion: 6) == multipart)
        #expect(UploadCheckpoint(storedForm: "{not json", confirmedOffset: 0, interopVersion: 6) == nil)
    }

    @Test func destinationsAreParsed() throws {
        let credentials = try #require(S3Credentials(accessKeyID: "AK", secretAccessKey: "SK"))
        let aws = try S3Configuration(destination: "s3://photos/a//b/", region: "eu-west-1", credentials: credentials)
        #expect(aws.bucket == "photos")
        #expect(aws.prefix == "a/b")
        #expect(aws.addressing == .virtualHosted)
        let metadata = UploadMetadata(filename: "IMG 1.jpg", sha256Hex: String(repeating: "ab", count: 32), verdictJSON: "{}")
        let key = aws.objectKey(for: metadata)
        #expect(key == "a/b/" + String(repeating: "ab", count: 32) + "-IMG_1.jpg")
        let target = aws.target(key: key, query: [("uploads", "")])
        #expect(target.host == "photos.s3.eu-west-1.amazonaws.com")
        #expect(target.url == "https://photos.s3.eu-west-1.amazonaws.com/a/b/\(String(repeating: "ab", count: 32))-IMG_1.jpg?uploads")
        #expect(aws.target(key: "a b/ü", query: []).path == "/a%20b/%C3%BC")
        let local = try S3Configuration(destination: "s3://photos", endpoint: "http://127.0.0.1:9000", credentials: credentials)
        #expect(local.prefix == "")
        #expect(local.target(key: "k", query: [("uploadId", "a b"), ("partNumber", "2")]).url
                == "http://127.0.0.1:9000/photos/k?partNumber=2&uploadId=a%20b")
        #expect(local.key(fromObjectURI: "s3://photos/x/y") == "x/y")
        #expect(local.key(fromObjectURI: "s3://other/x") == nil)
        for bad in ["s3://", "s3://UPPER/x", "s3://ab", "http://x/y", "s3://-bucket"] {
            #expect(throws: TransferError.self) { try S3Configuration(destination: bad, credentials: credentials) }
        }
        #expect(throws: TransferError.self) {
            try S3Configuration(destination: "s3://photos", endpoint: "http://127.0.0.1:9000/base", credentials: credentials)
        }
    }
}
