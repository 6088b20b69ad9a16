import Foundation

/// The HTTP `Retry-After` header (RFC 9110 §10.2.3): a delay in seconds or an HTTP-date.
public enum RetryAfter {
    /// The longest wait honoured: a server asking for more is retried after this.
    public static let maximumDelay: TimeInterval = 24 * 3600

    /// The time before which a retry should not start, from `headers` (names lowercased) received
    /// at `now`; nil when there is no `retry-after` or it is malformed. A date in the past gives
    /// `now`; a wait longer than `maximumDelay` is shortened to it.
    public static func notBefore(headers: [String: String], now: Date) -> Date? {
        guard let raw = headers["retry-after"] else { return nil }
        let value = raw.trimmingCharacters(in: .whitespaces)
        let delay: TimeInterval
        if !value.isEmpty, value.allSatisfy({ $0.isASCII && $0.isNumber }) {
            delay = Double(value.prefix(12)).map { value.count > 12 ? maximumDelay : $0 } ?? maximumDelay
        } else if let date = httpDate(value) {
            delay = date.timeIntervalSince(now)
        } else {
            return nil
        }
        return now.addingTimeInterval(min(max(0, delay), maximumDelay))
    }

    /// Parses an HTTP-date: IMF-fixdate, or the obsolete RFC 850 and asctime forms.
    static func httpDate(_ text: String) -> Date? {
        for format in ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
