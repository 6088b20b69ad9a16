import Foundation
import Testing
import Transfer

/// `Retry-After` is read where HTTP is (Transfer): a job's result carries the time as a value, and
/// the store never parses a header.
@Suite struct RetryAfterTests {
    /// Retry-After as seconds or as an HTTP-date (all three RFC 9110 forms); a date in the past
    /// means now, a huge wait is capped, anything else is ignored.
    @Test func retryAfterParsesSecondsAndHTTPDates() throws {
        let now = Date(timeIntervalSince1970: 1_445_412_420)   // Wed, 21 Oct 2015 07:27:00 GMT
        func wait(_ value: String) -> TimeInterval? {
            RetryAfter.notBefore(headers: ["retry-after": value], now: now)?.timeIntervalSince(now)
        }
        #expect(wait("120") == 120 && wait(" 0 ") == 0)
        #expect(wait("Wed, 21 Oct 2015 07:28:00 GMT") == 60)
        #expect(wait("Wednesday, 21-Oct-15 07:28:30 GMT") == 90)
        #expect(wait("Wed Oct 21 07:29:00 2015") == 120)
        #expect(wait("Tue, 20 Oct 2015 07:28:00 GMT") == 0)
        #expect(wait("99999999999999999999") == RetryAfter.maximumDelay)
        #expect(wait("-5") == nil && wait("soon") == nil && wait("") == nil)
        #expect(RetryAfter.notBefore(headers: [:], now: now) == nil)
    }

    /// Only a transient failure asks to be retried later; a permanent one's Retry-After is moot.
    @Test func aTransferErrorsTimeToWaitComesFromItsResponse() {
        let now = Date(timeIntervalSince1970: 1_445_412_420)
        var busy = TransferError.forStatus(503)
        busy.responseHeaders = ["retry-after": "30"]
        #expect(busy.retryNotBefore(now: now) == now.addingTimeInterval(30))
        var refused = TransferError.forStatus(400)
        refused.responseHeaders = ["retry-after": "30"]
        #expect(refused.retryNotBefore(now: now) == nil)
        #expect(TransferError.forStatus(503).retryNotBefore(now: now) == nil)
    }
}
