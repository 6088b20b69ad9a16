/// One request being answered: its head, its connection, how much of its body is still unread, and
/// notes for the request's log line. Answering with an unread body either drains a small body (to
/// keep the connection) or closes the connection.
final class Exchange {
    /// How an exchange ended, for the connection loop and the log.
    struct Outcome {
        /// The final status sent, or nil when the connection was dropped without one.
        var status: Int?
        /// Whether the connection may carry another request.
        var keepAlive: Bool
    }

    /// What an endpoint decided, sent by `reply(_:)` once the endpoint has let go of any upload it
    /// held (so the next request on that upload never waits for this one's response to be written).
    enum Reply {
        case response(HTTPResponse)
        /// A server-side failure: see `fail(_:)`.
        case failure(ReceiverError)
        /// End the connection without a response.
        case drop
    }

    let head: HTTPRequestHead
    let connection: HTTPConnection
    /// The declared body length (0 when none).
    let bodyLength: Int64
    /// Body bytes not yet consumed from the connection.
    var bodyRemaining: Int64
    /// Short facts for the log line (upload id, object id, reasons). Never the token or body.
    var notes: [String] = []
    /// Set once a 104 went out: from then on an internal failure drops the connection.
    var sentInterim = false
    /// Who sent the request (set once its token was checked).
    var principal = Principal.open
    /// The quota of the principal's account in bytes, nil for none.
    var quota: Int64?

    /// The largest unread body drained (rather than closing) to keep a connection after an early answer.
    private static let drainLimit: Int64 = 1 << 20

    init(head: HTTPRequestHead, connection: HTTPConnection, bodyLength: Int64) {
        self.head = head
        self.connection = connection
        self.bodyLength = bodyLength
        bodyRemaining = bodyLength
    }

    /// Carries out an endpoint's decision.
    func reply(_ reply: Reply) -> Outcome {
        switch reply {
        case .response(let response): return respond(response)
        case .failure(let error): return fail(error)
        case .drop: return drop()
        }
    }

    /// Whether the request's token may use an upload: its own device's, or any of its account
    /// with an admin token. Another's answers as an upload that does not exist.
    func owns(_ record: UploadRecord) -> Bool {
        principal.scope == .admin || record.metadata.device == principal.device
    }

    /// Sends a final response, draining or closing around an unread body; `close` ends the
    /// connection after it whatever the body.
    func respond(_ response: HTTPResponse, close: Bool = false) -> Outcome {
        var keepAlive = head.keepAlive && !close
        var unread = false
        if bodyRemaining > 0 {
            // With `Expect: 100-continue` and no 100 sent, the client may never send the body.
            if !close && bodyRemaining <= Self.drainLimit && !expectsContinue {
                keepAlive = keepAlive && connection.discardBody(length: bodyRemaining)
            } else {
                keepAlive = false
                unread = true
            }
            bodyRemaining = 0
        }
        let sent = connection.send(response, close: !keepAlive, headOnly: head.method == "HEAD")
        // Closing with body bytes unread would reset the connection and could destroy the
        // response before the client reads it: stop sending, then swallow what is in flight.
        if unread && sent { connection.lingerBeforeClose() }
        return Outcome(status: response.status, keepAlive: keepAlive && sent)
    }

    /// Answers a server-side failure: a 5xx (507 for a full disk) before any 104, a dropped
    /// connection after one (clients resume only then).
    func fail(_ error: ReceiverError) -> Outcome {
        notes.append(error.code == .diskFull ? "disk full: \(error.message)" : "failed: \(error.message)")
        if sentInterim { return drop() }
        let status = error.code == .diskFull ? 507 : 500
        // Close: how much of the body was consumed is not known here.
        return respond(.text(status, status == 507 ? "insufficient storage" : "internal error"), close: true)
    }

    /// Ends the exchange without a response.
    func drop() -> Outcome {
        connection.drop()
        notes.append("dropped")
        return Outcome(status: nil, keepAlive: false)
    }

    /// Whether the client may be sent interim (1xx) responses: an HTTP/1.0 one may not (RFC 9110
    /// 15.2). A reverse proxy speaks HTTP/1.0 to its backend by default (nginx does) and passes a
    /// 1xx on to its own client as the final response, its body the real final response.
    var takesInterimResponses: Bool { head.minorVersion >= 1 }

    /// True when the client waits for `100 Continue` before sending its body (an HTTP/1.0
    /// client's expectation is ignored, as RFC 9110 10.1.1 says).
    var expectsContinue: Bool {
        takesInterimResponses && head["expect"]?.lowercased() == "100-continue"
    }

    /// Sends an interim response (104 or 100). False when the peer is gone; nothing is sent, and
    /// false returned, to a client that takes no interim responses.
    @discardableResult
    func sendInterim(_ response: HTTPResponse) -> Bool {
        guard takesInterimResponses else { return false }
        return connection.send(response, close: false)
    }

    /// Sends `100 Continue` if the client asked for it and a body is coming.
    func continueIfExpected() {
        if expectsContinue && bodyRemaining > 0 { sendInterim(HTTPResponse(status: 100)) }
    }
}
