import CCurl
import SystemSupport

/// What libcurl's callbacks touch during one transfer: the file being streamed, the header blocks
/// and body received so far, and the cancellation flag. Used only on the transfer's own thread.
final class CurlTransferState {
    let cancellation: CancellationFlag
    let settings: CurlSettings
    var file: ReadOnlyFile?
    /// The body when it is held in memory rather than read from `file`.
    var memoryBody: [UInt8]?
    var bodyStart: Int64 = 0
    var bodyLength: Int64 = 0
    var mayResendPartialBody = true
    /// `HTTPRequest.onBodySent`, cleared once called.
    var onBodySent: (@Sendable () -> Void)?
    /// `HTTPRequest.bodyObserver`.
    var bodyObserver: (@Sendable (UnsafeRawBufferPointer, Int64) -> Void)?
    /// `HTTPRequest.responseBodyObserver`.
    var responseBodyObserver: (@Sendable (UnsafeRawBufferPointer) -> Void)?
    /// `HTTPRequest.onInterimResponse`.
    var onInterimResponse: (@Sendable (HTTPInterimResponse) -> Void)?
    var readOffset: Int64 = 0
    var remaining: Int64 = 0
    var bytesSent: Int64 = 0
    var fileFailed = false
    var headersOverflowed = false
    var headerBytes = 0
    /// libcurl's error text for the transfer (`CURLOPT_ERRORBUFFER`, `CURL_ERROR_SIZE` bytes).
    let errorBuffer: UnsafeMutablePointer<CChar> = {
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        buffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        return buffer
    }()
    /// Every response block seen, 1xx and final, in order. A block is `complete` once the empty
    /// line ending its headers arrived: when the connection closes mid-headers, libcurl may still
    /// report success (seen with HEAD), and such a block must not be believed.
    var blocks: [(status: Int, headers: [String: String], complete: Bool)] = []
    var body: [UInt8] = []

    init(cancellation: CancellationFlag, settings: CurlSettings) {
        self.cancellation = cancellation
        self.settings = settings
    }

    deinit { errorBuffer.deallocate() }

    /// True when the TLS handshake failed because the server answered in plain text: OpenSSL's
    /// "wrong version number" (an http:// server reached with https://).
    var serverAnsweredWithoutTLS: Bool {
        String(cString: errorBuffer).lowercased().contains("wrong version number")
    }

    /// Fills libcurl's buffer from the file; aborts the transfer when the file cannot supply the range.
    func readBody(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
        guard remaining > 0 else { return 0 }
        if let memoryBody {
            let start = Int(readOffset)
            let count = Int(min(Int64(capacity), remaining))
            memoryBody.withUnsafeBytes { raw in
                if let base = raw.baseAddress { buffer.copyMemory(from: base + start, byteCount: count) }
            }
            readOffset += Int64(count)
            remaining -= Int64(count)
            if remaining == 0 { reportBodySent() }
            return count
        }
        guard let file else {
            fileFailed = true
            return pd_curl_readfunc_abort()
        }
        var wanted = Int(min(Int64(capacity), remaining))
        if let piece = settings.bandwidth?.pieceSize { wanted = min(wanted, piece) }
        let piece = UnsafeMutableRawBufferPointer(start: buffer, count: wanted)
        guard let count = try? file.read(into: piece, at: readOffset), count > 0 else {
            fileFailed = true  // a read error, or the file shrank since its size was taken
            return pd_curl_readfunc_abort()
        }
        // The bytes wait for the shared budget before libcurl gets them (a stop cuts the wait).
        if let bandwidth = settings.bandwidth, !bandwidth.spend(count, cancelled: { self.cancellation.isCancelled }) {
            return pd_curl_readfunc_abort()
        }
        bodyObserver?(UnsafeRawBufferPointer(start: buffer, count: count), readOffset)
        readOffset += Int64(count)
        remaining -= Int64(count)
        if remaining == 0 { reportBodySent() }
        return count
    }

    /// Calls `onBodySent` the first time the whole body has been handed to libcurl.
    private func reportBodySent() {
        guard let callback = onBodySent else { return }
        onBodySent = nil
        callback()
    }

    /// Moves the body back to `position` bytes from its start, when libcurl re-sends it on a new
    /// connection (a reused connection that turned out to be closed by the server).
    func rewindBody(to position: Int64) -> Bool {
        guard position >= 0, position <= bodyLength else { return false }
        let nothingReadYet = remaining == bodyLength && position == 0
        guard mayResendPartialBody || nothingReadYet else { return false }
        readOffset = bodyStart + position
        remaining = bodyLength - position
        return true
    }

    /// Records one header line; false (abort) when the headers exceed the configured limit.
    func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Bool {
        headerBytes += bytes.count
        guard headerBytes <= settings.maxHeaderBytes else {
            headersOverflowed = true
            return false
        }
        let terminated = bytes.last == UInt8(ascii: "\n")
        var line = Substring(String(decoding: bytes, as: UTF8.self))
        while let last = line.last, last == "\r\n" || last == "\n" || last == "\r" { line = line.dropLast() }
        if line.hasPrefix("HTTP/") {
            let parts = line.split(separator: " ", maxSplits: 2)
            let status = parts.count >= 2 ? Int(parts[1]) ?? 0 : 0
            blocks.append((status, [:], false))
            return true
        }
        if line.isEmpty && terminated && !blocks.isEmpty {
            blocks[blocks.count - 1].complete = true
            if let onInterimResponse, let block = blocks.last, (100...199).contains(block.status) {
                onInterimResponse(HTTPInterimResponse(status: block.status, headers: block.headers))
            }
            return true
        }
        guard !line.isEmpty, !blocks.isEmpty, let colon = line.firstIndex(of: ":") else { return true }
        let name = line[..<colon].trimmingSpaces().lowercased()
        let value = String(line[line.index(after: colon)...].trimmingSpaces())
        guard !name.isEmpty else { return true }
        let index = blocks.count - 1
        if let existing = blocks[index].headers[name] {
            blocks[index].headers[name] = existing + ", " + value
        } else {
            blocks[index].headers[name] = value
        }
        return true
    }

    /// Shows the body to `responseBodyObserver`, keeps its first `maxBodyBytes` and drops the rest.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) {
        responseBodyObserver?(bytes)
        let room = settings.maxBodyBytes - body.count
        if room > 0 { body.append(contentsOf: bytes.prefix(room)) }
    }

    var interimResponses: [HTTPInterimResponse] {
        blocks.filter { (100...199).contains($0.status) && $0.complete }
            .map { HTTPInterimResponse(status: $0.status, headers: $0.headers) }
    }

    func failure(_ error: TransferError) -> HTTPExchange {
        HTTPExchange(interimResponses: interimResponses, bytesSent: bytesSent, result: .failure(error))
    }

    func finish(status: Int) -> HTTPExchange {
        guard let final = blocks.last(where: { !(100...199).contains($0.status) }), (200...599).contains(status) else {
            // Interim answers at most, then the connection ended (libcurl can call that a
            // success): the final response was lost on the way, as with any dropped connection.
            return failure(TransferError(.connectionLost, "the connection closed before a final response arrived"))
        }
        guard final.status == status else {
            return failure(TransferError(.badServerResponse, "the server sent no parseable final response"))
        }
        guard final.complete else {
            return failure(TransferError(.connectionLost, "the connection closed before the response headers ended"))
        }
        let response = HTTPResponse(status: status, headers: final.headers, interimResponses: interimResponses,
                                    body: body, bytesSent: bytesSent)
        return HTTPExchange(interimResponses: interimResponses, bytesSent: bytesSent, result: .success(response))
    }

    func error(for code: CURLcode) -> TransferError {
        if code == CURLE_SSL_CONNECT_ERROR && serverAnsweredWithoutTLS {
            // A configuration mistake like a wrong token, not a network hiccup: permanent.
            return TransferError(.tlsFailure, "TLS handshake failed: the server answered without TLS: is it http://?",
                                 curlCode: Int(code.rawValue))
        }
        return CurlEasy.transferError(forCode: code.rawValue, fileFailed: fileFailed, headersOverflowed: headersOverflowed)
    }
}

private extension Substring {
    func trimmingSpaces() -> Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return s
    }
}
