import CCrypto
import CCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Every call into libcurl, libcrypto and the POSIX file API made by Transfer lives in this file.
// Each C handle is owned by a final class that frees it in deinit.

// MARK: - libcurl

/// Tunables of one libcurl transfer, taken from `HTTPClient.Options`.
struct CurlSettings: Sendable {
    var connectTimeoutMilliseconds: Int
    var lowSpeedLimitBytesPerSecond: Int
    var lowSpeedTimeSeconds: Int
    var uploadBufferSize: Int
    var maxHeaderBytes: Int
    var maxBodyBytes: Int
    var userAgent: String
    /// CURLOPT_CAINFO, when not libcurl's default.
    var caFile: String?
    /// CURLOPT_CAPATH, when not libcurl's default.
    var caDirectory: String?
    /// The upload budget bodies share, when limited.
    var bandwidth: BandwidthLimit?
}

/// One libcurl easy handle. libcurl keeps its connection cache, DNS cache and TLS sessions on the
/// handle, so a handle reused for the next request reuses the connection.
///
/// `@unchecked Sendable`: a handle moves between threads but is used by one at a time —
/// `HTTPClient` hands it out from a locked pool and takes it back when the transfer ends.
final class CurlEasy: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer

    /// Creates a handle; nil when libcurl cannot initialise.
    init?() {
        guard pd_curl_global_init_once() == CURLE_OK, let handle = curl_easy_init() else { return nil }
        self.handle = handle
    }

    deinit { curl_easy_cleanup(handle) }

    /// Performs one request on the calling thread (blocking) and reports what happened.
    func perform(_ request: HTTPRequest, settings: CurlSettings, cancellation: CancellationFlag) -> HTTPExchange {
        curl_easy_reset(handle)
        let state = CurlTransferState(cancellation: cancellation, settings: settings)
        state.onBodySent = request.onBodySent
        state.bodyObserver = request.bodyObserver
        state.onInterimResponse = request.onInterimResponse
        if case .file(let path, let offset, let length) = request.body {
            guard offset >= 0, length >= 0 else {
                return state.failure(TransferError(.invalidRequest, "a negative body range was requested"))
            }
            do {
                state.file = try OpenFile(path: path)
            } catch {
                return state.failure(error)
            }
            state.bodyStart = offset
            state.bodyLength = length
            state.readOffset = offset
            state.remaining = length
            state.mayResendPartialBody = request.mayResendPartialBody
        } else if case .bytes(let bytes) = request.body {
            state.memoryBody = bytes
            state.bodyLength = Int64(bytes.count)
            state.remaining = Int64(bytes.count)
            state.mayResendPartialBody = request.mayResendPartialBody
        }

        var list: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(list) }
        for (name, value) in request.headers {
            list = curl_slist_append(list, "\(name): \(value)")
        }
        if request.waitsForContinue {
            list = curl_slist_append(list, "Expect: 100-continue")
        } else if request.body != .none {
            // libcurl adds `Expect: 100-continue` to large bodies; the protocol relies on 104 instead.
            list = curl_slist_append(list, "Expect:")
        }

        let userData = Unmanaged.passUnretained(state).toOpaque()
        var setupFailed = false
        func check(_ code: CURLcode) { if code != CURLE_OK { setupFailed = true } }

        check(pd_curl_setopt_string(handle, CURLOPT_URL, request.url))
        check(pd_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        check(pd_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        check(pd_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        check(pd_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
        check(pd_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
        // curl's own words, only to tell a server that answered without TLS; never shown (they
        // name hosts and paths).
        check(pd_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, state.errorBuffer))
        if let caFile = settings.caFile { check(pd_curl_setopt_string(handle, CURLOPT_CAINFO, caFile)) }
        if let caDirectory = settings.caDirectory { check(pd_curl_setopt_string(handle, CURLOPT_CAPATH, caDirectory)) }
        check(pd_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeoutMilliseconds))
        check(pd_curl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, settings.lowSpeedLimitBytesPerSecond))
        check(pd_curl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, settings.lowSpeedTimeSeconds))
        check(pd_curl_setopt_string(handle, CURLOPT_USERAGENT, settings.userAgent))
        check(pd_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, list))
        check(pd_curl_setopt_long(handle, CURLOPT_NOPROGRESS, 0))
        check(pd_curl_setopt_pointer(handle, CURLOPT_XFERINFODATA, userData))
        check(pd_curl_setopt_xferinfo_function(handle) { userData, _, _, _, uploaded in
            guard let userData else { return 1 }
            let state = Unmanaged<CurlTransferState>.fromOpaque(userData).takeUnretainedValue()
            state.bytesSent = max(state.bytesSent, Int64(uploaded))
            return state.cancellation.isCancelled ? 1 : 0
        })
        check(pd_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, userData))
        check(pd_curl_setopt_header_function(handle) { buffer, size, count, userData in
            guard let buffer, let userData else { return 0 }
            let state = Unmanaged<CurlTransferState>.fromOpaque(userData).takeUnretainedValue()
            let bytes = UnsafeRawBufferPointer(start: buffer, count: size * count)
            return state.receiveHeaderLine(bytes) ? size * count : 0
        })
        check(pd_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, userData))
        check(pd_curl_setopt_write_function(handle) { buffer, size, count, userData in
            guard let buffer, let userData else { return 0 }
            let state = Unmanaged<CurlTransferState>.fromOpaque(userData).takeUnretainedValue()
            state.receiveBody(UnsafeRawBufferPointer(start: buffer, count: size * count))
            return size * count
        })

        switch request.body {
        case .none:
            if request.method == "HEAD" {
                check(pd_curl_setopt_long(handle, CURLOPT_NOBODY, 1))
            } else if request.method != "GET" {
                check(pd_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method))
            }
        case .empty, .file, .bytes:
            check(pd_curl_setopt_long(handle, CURLOPT_UPLOAD, 1))
            check(pd_curl_setopt_off(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(state.remaining)))
            check(pd_curl_setopt_long(handle, CURLOPT_UPLOAD_BUFFERSIZE, settings.uploadBufferSize))
            check(pd_curl_setopt_pointer(handle, CURLOPT_READDATA, userData))
            check(pd_curl_setopt_read_function(handle) { buffer, size, count, userData in
                guard let buffer, let userData else { return pd_curl_readfunc_abort() }
                let state = Unmanaged<CurlTransferState>.fromOpaque(userData).takeUnretainedValue()
                return state.readBody(into: UnsafeMutableRawPointer(buffer), capacity: size * count)
            })
            check(pd_curl_setopt_pointer(handle, CURLOPT_SEEKDATA, userData))
            check(pd_curl_setopt_seek_function(handle) { userData, offset, origin in
                guard let userData, origin == SEEK_SET else { return 2 }  // CURL_SEEKFUNC_CANTSEEK
                let state = Unmanaged<CurlTransferState>.fromOpaque(userData).takeUnretainedValue()
                return state.rewindBody(to: Int64(offset)) ? 0 : 2  // CURL_SEEKFUNC_OK : CURL_SEEKFUNC_CANTSEEK
            })
            if request.method != "PUT" {
                check(pd_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method))
            }
        }
        if setupFailed {
            return state.failure(TransferError(.invalidRequest, "libcurl rejected the request options"))
        }
        if cancellation.isCancelled {
            return state.failure(TransferError(.cancelled, "the transfer was cancelled"))
        }

        let code = withExtendedLifetime(state) { curl_easy_perform(handle) }

        var sent: curl_off_t = 0
        _ = pd_curl_getinfo_off(handle, CURLINFO_SIZE_UPLOAD_T, &sent)
        state.bytesSent = max(state.bytesSent, Int64(sent))
        if code != CURLE_OK {
            return state.failure(state.error(for: code))
        }
        var status = 0
        _ = pd_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return state.finish(status: status)
    }

    /// Maps a libcurl result code to the sanitised error. curl's own error buffer names hosts and
    /// paths, so only its static description of the code is ever used.
    static func transferError(forCode raw: UInt32, fileFailed: Bool = false, headersOverflowed: Bool = false) -> TransferError {
        let error = classify(CURLcode(rawValue: raw), fileFailed: fileFailed, headersOverflowed: headersOverflowed)
        return TransferError(error.code, error.message, curlCode: Int(raw), classification: error.classification)
    }

    private static func classify(_ code: CURLcode, fileFailed: Bool, headersOverflowed: Bool) -> TransferError {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return TransferError(.hostNotFound, "the server's host name did not resolve")
        case CURLE_COULDNT_CONNECT:
            return TransferError(.connectionFailed, "the server could not be reached")
        case CURLE_OPERATION_TIMEDOUT:
            return TransferError(.timedOut, "the connection timed out or stalled")
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_SEND_FAIL_REWIND:
            return TransferError(.connectionLost, "the connection was lost")
        case CURLE_SSL_CONNECT_ERROR:
            return TransferError(.tlsFailure, "the TLS handshake failed", classification: .transient)
        case CURLE_PEER_FAILED_VERIFICATION:
            return TransferError(.tlsFailure, "the server's certificate could not be verified (self-signed or a private CA?)")
        case CURLE_SSL_CACERT_BADFILE:
            return TransferError(.tlsFailure, "the CA certificates to verify the server with could not be loaded")
        case CURLE_SSL_CERTPROBLEM:
            return TransferError(.tlsFailure, "the server's certificate could not be verified")
        case CURLE_READ_ERROR:
            return TransferError(.fileUnreadable, "the file could not be read during the upload")
        case CURLE_ABORTED_BY_CALLBACK:
            if fileFailed { return TransferError(.fileUnreadable, "the file could not be read or shrank during the upload") }
            return TransferError(.cancelled, "the transfer was cancelled")
        case CURLE_WRITE_ERROR where headersOverflowed:
            return TransferError(.badServerResponse, "the server's response headers were too large")
        case CURLE_WEIRD_SERVER_REPLY:
            return TransferError(.badServerResponse, "the server's reply was not valid HTTP", classification: .transient)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return TransferError(.invalidRequest, "the destination URL is not a valid http(s) URL")
        default:
            let text = curl_easy_strerror(code).map { String(cString: $0) } ?? "unknown error"
            return TransferError(.transportFailure, "libcurl: \(text)")
        }
    }
}

/// What libcurl's callbacks touch during one transfer: the file being streamed, the header blocks
/// and body received so far, and the cancellation flag. Used only on the transfer's own thread.
private final class CurlTransferState {
    let cancellation: CancellationFlag
    let settings: CurlSettings
    var file: OpenFile?
    /// The body when it is held in memory rather than read from `file`.
    var memoryBody: [UInt8]?
    var bodyStart: Int64 = 0
    var bodyLength: Int64 = 0
    var mayResendPartialBody = true
    /// `HTTPRequest.onBodySent`, cleared once called.
    var onBodySent: (@Sendable () -> Void)?
    /// `HTTPRequest.bodyObserver`.
    var bodyObserver: (@Sendable (UnsafeRawBufferPointer, Int64) -> Void)?
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
        guard let count = file.read(into: buffer, count: wanted, at: readOffset), count > 0 else {
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

    /// Keeps the first `maxBodyBytes` of the body and drops the rest.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) {
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

// MARK: - POSIX files

/// A file opened read-only for streaming, closed in deinit.
final class OpenFile {
    private let descriptor: Int32

    /// Opens `path` for reading. Throws `file-unreadable` unless it is a regular file: the open
    /// is non-blocking and the type is checked before any read, so a FIFO (whose open and reads
    /// wait for a writer that may never come), a device or a directory fails at once.
    init(path: String) throws(TransferError) {
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw TransferError(.fileUnreadable, "the file could not be opened") }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            close(fd)
            throw TransferError(.fileUnreadable, "the file could not be examined")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw TransferError(.fileUnreadable, "the path is not a regular file (a directory, FIFO, socket or device)")
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// The file's size in bytes.
    func size() throws(TransferError) -> Int64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw TransferError(.fileUnreadable, "the file could not be examined") }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw TransferError(.fileUnreadable, "the path is not a regular file") }
        return Int64(info.st_size)
    }

    /// What tells one version of the file from another: inode, size, modification and change
    /// times. Two equal stamps taken around a read mean the read saw one version.
    struct Stamp: Equatable {
        var inode: UInt64
        var size: Int64
        var modified: timespec
        var changed: timespec

        static func == (a: Stamp, b: Stamp) -> Bool {
            a.inode == b.inode && a.size == b.size && a.modified.tv_sec == b.modified.tv_sec
                && a.modified.tv_nsec == b.modified.tv_nsec && a.changed.tv_sec == b.changed.tv_sec
                && a.changed.tv_nsec == b.changed.tv_nsec
        }
    }

    /// The file's current `Stamp`.
    func stamp() throws(TransferError) -> Stamp {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw TransferError(.fileUnreadable, "the file could not be examined") }
        return Stamp(inode: UInt64(info.st_ino), size: Int64(info.st_size), modified: info.st_mtim, changed: info.st_ctim)
    }

    /// The file's device, inode, size and modification time in nanoseconds since the epoch: what
    /// `FileIdentity` keeps to know the file again in a later run.
    func identity() throws(TransferError) -> (device: UInt64, inode: UInt64, size: Int64, modifiedNanoseconds: Int64) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw TransferError(.fileUnreadable, "the file could not be examined") }
        let modified = Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec)
        return (UInt64(info.st_dev), UInt64(info.st_ino), Int64(info.st_size), modified)
    }

    /// Reads up to `count` bytes at `offset`; nil on error, 0 at end of file.
    func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) -> Int? {
        while true {
            let n = pread(descriptor, buffer, count, off_t(offset))
            if n >= 0 { return n }
            if errno != EINTR { return nil }
        }
    }
}

/// Renames `from` to `to` (`rename(2)`), replacing `to` atomically when it exists. False on failure.
func renameFile(_ from: String, to: String) -> Bool {
    rename(from, to) == 0
}

/// Writes `bytes` to the file `path`, created with `mode` or emptied first, without fsync
/// (Foundation's atomic write fsyncs, a disk flush per checkpoint). False on any failure, the file
/// then possibly left partly written for the caller to remove.
func writeWholeFile(_ path: String, bytes: [UInt8], mode: mode_t) -> Bool {
    var fd: Int32
    repeat { fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode) } while fd < 0 && errno == EINTR
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var written = 0
    while written < bytes.count {
        let n = bytes.withUnsafeBytes { raw -> Int in
            guard let base = raw.baseAddress else { return 0 }
            return write(fd, base + written, raw.count - written)
        }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return false }
        written += n
    }
    return true
}

// MARK: - libcrypto

/// A streaming SHA-256 computation (libcrypto EVP), freed in deinit.
final class SHA256Hasher {
    private let context: OpaquePointer

    /// Starts a computation.
    init() throws(TransferError) {
        guard let context = pd_sha256_create() else {
            throw TransferError(.invalidRequest, "libcrypto could not start a SHA-256 digest")
        }
        self.context = context
    }

    deinit { pd_sha256_free(context) }

    /// Feeds bytes.
    func update(_ bytes: UnsafeRawBufferPointer) throws(TransferError) {
        guard bytes.count > 0 else { return }
        guard pd_sha256_update(context, bytes.baseAddress, bytes.count) == 1 else {
            throw TransferError(.invalidRequest, "libcrypto failed while hashing")
        }
    }

    /// The 32-byte digest; call once.
    func finish() throws(TransferError) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(PD_SHA256_LENGTH))
        let ok = digest.withUnsafeMutableBufferPointer { pd_sha256_final(context, $0.baseAddress) }
        guard ok == 1 else { throw TransferError(.invalidRequest, "libcrypto failed to finish the digest") }
        return digest
    }
}

/// HMAC-SHA256 through libcrypto; nil only if libcrypto fails.
func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: Int(PD_SHA256_LENGTH))
    let ok = key.withUnsafeBytes { k in
        message.withUnsafeBytes { m in
            out.withUnsafeMutableBufferPointer { o in
                pd_hmac_sha256(k.baseAddress, k.count, m.baseAddress, m.count, o.baseAddress)
            }
        }
    }
    return ok == 1 ? out : nil
}
