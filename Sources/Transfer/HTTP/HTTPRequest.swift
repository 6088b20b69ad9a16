/// One HTTP request for `HTTPClient`: the method, the absolute URL, the header fields in order,
/// and where the body comes from. Bodies are streamed from disk, never buffered whole.
public struct HTTPRequest: Sendable {
    /// Where a request body comes from.
    public enum Body: Sendable, Equatable {
        /// No body and no `Content-Length` (GET, HEAD, OPTIONS, DELETE).
        case none
        /// An empty body with `Content-Length: 0` (the careful resumable creation).
        case empty
        /// `length` bytes of the file at `path`, starting at byte `offset`.
        case file(path: String, offset: Int64, length: Int64)
        /// A small body held in memory (an S3 XML request, a form), sent with its `Content-Length`.
        case bytes([UInt8])
    }

    /// The method, e.g. `POST`, `PATCH`, `HEAD`.
    public var method: String
    /// The absolute `http` or `https` URL.
    public var url: String
    /// Header fields as sent, in order.
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: Body
    /// Whether libcurl may silently send the body again from its start on a fresh connection when
    /// a reused connection fails after part of it went out. True suits plain uploads; resumable
    /// requests set it false, so a broken body surfaces as `connection-lost` and the protocol
    /// resumes from the server's offset instead of resending everything.
    public var mayResendPartialBody: Bool
    /// Called once, on the transfer's thread, when libcurl has taken the last byte of the body:
    /// from then on the client only waits for the server's answer, so it is a good moment to
    /// start work that would otherwise compete with sending (hashing the next file). It must
    /// return quickly.
    public var onBodySent: (@Sendable () -> Void)?
    /// Sees every piece of a `.file` body as libcurl takes it, with the file offset of its first
    /// byte, on the transfer's thread (a piece may be seen again if libcurl rewinds the body).
    /// The bytes are valid only during the call.
    public var bodyObserver: (@Sendable (UnsafeRawBufferPointer, Int64) -> Void)?
    /// Called on the transfer's thread with each interim (1xx) response as soon as its headers
    /// have ended, while the request may still be sending: a 104's upload URL can be saved before
    /// the body is through. It must return quickly.
    public var onInterimResponse: (@Sendable (HTTPInterimResponse) -> Void)?
    /// Sends `Expect: 100-continue` and holds the body until the server's `100 Continue` (or
    /// libcurl's one-second wait for it runs out). A resumable-upload server sends its `104` with
    /// the upload URL before the `100`, so no body byte goes out before the client holds the
    /// URL: a cut during the body can then always be resumed.
    public var waitsForContinue = false
    /// Sees every piece of the response body as it arrives, on the transfer's thread, whatever
    /// `HTTPClient.Options.maxBodyBytes` keeps: a download is hashed as it streams (`verify
    /// --deep`) instead of being held in memory. The bytes are valid only during the call.
    public var responseBodyObserver: (@Sendable (UnsafeRawBufferPointer) -> Void)?

    /// Creates a request.
    public init(method: String, url: String, headers: [(name: String, value: String)] = [], body: Body = .none,
                mayResendPartialBody: Bool = true, onBodySent: (@Sendable () -> Void)? = nil,
                bodyObserver: (@Sendable (UnsafeRawBufferPointer, Int64) -> Void)? = nil,
                onInterimResponse: (@Sendable (HTTPInterimResponse) -> Void)? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.mayResendPartialBody = mayResendPartialBody
        self.onBodySent = onBodySent
        self.bodyObserver = bodyObserver
        self.onInterimResponse = onInterimResponse
    }
}
