import Foundation
import Receiver
import Testing

/// The head limits at their edges, through the public parsing entry (`RequestHeadParsing`, what
/// the fuzzer drives) and through a running receiver, which must agree with it.
@Suite struct HeadLimitTests {
    /// A GET head whose bytes before the empty line number exactly `size`, padded by one header.
    static func head(totalBytes size: Int) -> [UInt8] {
        let start = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: "
        let padding = max(0, size - start.utf8.count)
        return Array((start + String(repeating: "p", count: padding) + "\r\n\r\n").utf8)
    }

    /// A head with `count` header fields besides Host.
    static func head(fields count: Int) -> [UInt8] {
        Array(("GET /healthz HTTP/1.1\r\nHost: x\r\n" + (0..<count).map { "X-F\($0): v\r\n" }.joined() + "\r\n").utf8)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let bytes: [UInt8]
        let refusal: Int?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "head of 32768 bytes", bytes: head(totalBytes: 32_768), refusal: nil),
        Case(name: "head of 32769 bytes", bytes: head(totalBytes: 32_769), refusal: 431),
        Case(name: "99 fields and Host", bytes: head(fields: 99), refusal: nil),
        Case(name: "100 fields and Host", bytes: head(fields: 100), refusal: 431),
        Case(name: "request line of 8192 bytes",
             bytes: Array(("GET /" + String(repeating: "a", count: 8_192 - 14) + " HTTP/1.1\r\nHost: x\r\n\r\n").utf8), refusal: 404),
        Case(name: "request line of 8193 bytes",
             bytes: Array(("GET /" + String(repeating: "a", count: 8_193 - 14) + " HTTP/1.1\r\nHost: x\r\n\r\n").utf8), refusal: 414),
        Case(name: "Content-Length of 18 digits",
             bytes: Array("POST /uploads HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999999999\r\n\r\n".utf8), refusal: nil),
        Case(name: "Content-Length of 19 digits",
             bytes: Array("POST /uploads HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000000000\r\n\r\n".utf8), refusal: 400),
    ]

    @Test(arguments: cases)
    func parsingEntryAppliesTheLimits(testCase: Case) throws {
        let outcome = try #require(RequestHeadParsing.parse(testCase.bytes))
        // The parser accepts a head whose path the router then refuses (404): only the head counts here.
        #expect(outcome.refusal == (testCase.refusal == 404 ? nil : testCase.refusal))
    }

    @Test(arguments: cases.filter { $0.refusal != nil })
    func receiverAnswersTheSameRefusal(testCase: Case) throws {
        let receiver = try TestReceiver()
        defer { receiver.stop(); receiver.removeDirectory() }
        let client = try receiver.client()
        client.send(testCase.bytes)
        #expect(try client.readResponse().status == testCase.refusal)
        #expect(try receiver.client().request("GET", "/healthz").status == 200)
    }

    @Test func incompleteHeadIsNotAnOutcomeUntilItIsTooLong() {
        #expect(RequestHeadParsing.parse(Array("GET /healthz HTTP/1.1\r\nHost: x\r\n".utf8)) == nil)
        #expect(RequestHeadParsing.parse(Array(repeating: UInt8(ascii: "a"), count: 8_193))?.refusal == 414)
        #expect(RequestHeadParsing.parse(Array(("GET / HTTP/1.1\r\n" + String(repeating: "h", count: 32_800)).utf8))?.refusal == 431)
    }

    /// Up to `maxLeadingEmptyLines` empty lines before the request line are
    /// ignored; more is refused at once, complete request or not.
    @Test(arguments: [(0, nil as Int?), (8, nil), (9, 400), (100_000, 400)])
    func leadingEmptyLinesAreCapped(count: Int, refusal: Int?) throws {
        let request = Array((String(repeating: "\r\n", count: count) + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").utf8)
        let outcome = try #require(RequestHeadParsing.parse(request))
        #expect(outcome.refusal == refusal)
        // The flood alone is refused too, before any request line arrives.
        let flood = RequestHeadParsing.parse(Array(String(repeating: "\r\n", count: count).utf8))
        #expect(flood?.refusal == refusal)
    }
}
