/// A response as `HTTPClient` received it: the final status and its headers (names lowercased,
/// repeated fields joined with ", "), every interim 1xx response before it, and a bounded prefix of
/// the body (for problem details; never logged).
public struct HTTPResponse: Sendable {
    /// The final status code.
    public var status: Int
    /// The final response's headers, names lowercased.
    public var headers: [String: String]
    /// The 1xx responses that came first (e.g. `104 Upload Resumption Supported`), in order.
    public var interimResponses: [HTTPInterimResponse]
    /// The first bytes of the body, at most `HTTPClient.Options.maxBodyBytes`.
    public var body: [UInt8]
    /// Request body bytes sent on the wire for this exchange.
    public var bytesSent: Int64

    /// Creates a response.
    public init(status: Int, headers: [String: String], interimResponses: [HTTPInterimResponse] = [],
                body: [UInt8] = [], bytesSent: Int64 = 0) {
        self.status = status
        self.headers = headers
        self.interimResponses = interimResponses
        self.body = body
        self.bytesSent = bytesSent
    }
}

/// An informational (1xx) response: its status and headers, names lowercased.
public struct HTTPInterimResponse: Sendable, Equatable {
    /// The status, 100...199.
    public var status: Int
    /// The headers, names lowercased.
    public var headers: [String: String]

    /// Creates an interim response.
    public init(status: Int, headers: [String: String]) {
        self.status = status
        self.headers = headers
    }
}

/// What one exchange produced, even when it failed: the interim responses that arrived (a 104's
/// Location survives a dropped connection), the bytes sent, and the final response or the error.
public struct HTTPExchange: Sendable {
    /// The 1xx responses received, in order, whether or not a final response followed.
    public var interimResponses: [HTTPInterimResponse]
    /// Request body bytes sent on the wire.
    public var bytesSent: Int64
    /// The final response, or why there was none.
    public var result: Result<HTTPResponse, TransferError>

    /// Creates an exchange record.
    public init(interimResponses: [HTTPInterimResponse], bytesSent: Int64, result: Result<HTTPResponse, TransferError>) {
        self.interimResponses = interimResponses
        self.bytesSent = bytesSent
        self.result = result
    }
}
