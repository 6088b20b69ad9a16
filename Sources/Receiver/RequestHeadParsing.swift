/// The request-head parsing `serve` applies to every request — the same search for the end of
/// the head, the same limits, the same `Content-Length` rules — as one public call, so a fuzzer or
/// a tool can drive it without a socket.
public enum RequestHeadParsing {
    /// What the receiver made of one request head.
    public struct Outcome: Sendable, Equatable {
        /// The status the receiver refuses the request with (400, 411, 414, 431, 501, 505; 400 too
        /// for more than `HTTPConnection.maxLeadingEmptyLines` empty lines before it), or nil
        /// when the head was accepted.
        public var refusal: Int?
        public var method: String?
        /// The path of the request target, still percent-encoded.
        public var path: String?
        public var contentLength: Int64?
    }

    /// Parses the head at the start of `bytes` (through its empty line) with the receiver's
    /// default limits; nil when `bytes` hold no complete head and are still under the limits (the
    /// receiver would wait for more).
    public static func parse(_ bytes: [UInt8], maxRequestLineBytes: Int = 8_192, maxHeaderBytes: Int = 32_768,
                             maxHeaderCount: Int = 100) -> Outcome? {
        let leading = HTTPConnection.leadingEmptyLines(in: bytes)
        if leading > HTTPConnection.maxLeadingEmptyLines { return Outcome(refusal: 400) }
        let rest = Array(bytes.dropFirst(leading * 2))
        guard let end = HTTPConnection.headEnd(in: rest, from: 0) else {
            if !rest.contains(10) && rest.count > maxRequestLineBytes { return Outcome(refusal: 414) }
            if rest.count > maxHeaderBytes { return Outcome(refusal: 431) }
            return nil
        }
        if end > maxHeaderBytes { return Outcome(refusal: 431) }
        do {
            let head = try HTTPRequestHead(parsing: rest[0..<end], maxRequestLineBytes: maxRequestLineBytes,
                                           maxHeaderCount: maxHeaderCount)
            let length = try head.contentLength()
            return Outcome(refusal: nil, method: head.method, path: head.path, contentLength: length)
        } catch {
            return Outcome(refusal: error.status)
        }
    }
}
