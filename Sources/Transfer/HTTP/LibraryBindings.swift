import CCurl
import SystemSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Every call into libcurl made by Transfer lives here and in `CurlTransferState.swift` (what its
// callbacks touch during a transfer). Files are read through `SystemSupport.ReadOnlyFile`, digests
// computed by `SystemSupport.SHA256`, and files written in `FileWrites.swift`.

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

    /// libcurl's built-in CA directory (Debian's: /etc/ssl/certs, kept by update-ca-certificates
    /// with the same certificates as its bundle, each under its subject hash), when it has such
    /// hashed entries; nil leaves libcurl's defaults as they are.
    static let systemCADirectory: String? = {
        guard pd_curl_global_init_once() == CURLE_OK, let probe = curl_easy_init() else { return nil }
        defer { curl_easy_cleanup(probe) }
        var path: UnsafeMutablePointer<CChar>?
        guard pd_curl_getinfo_string(probe, CURLINFO_CAPATH, &path) == CURLE_OK, let path else { return nil }
        let directory = String(cString: path)
        return holdsHashedCertificates(directory) ? directory : nil
    }()

    /// Whether `directory` has an entry named as OpenSSL looks certificates up by subject hash
    /// (eight hex digits, a dot, a number: `5ed36f99.0`).
    static func holdsHashedCertificates(_ directory: String) -> Bool {
        guard let entries = opendir(directory) else { return false }
        defer { closedir(entries) }
        while let entry = readdir(entries) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            if parts.count == 2, parts[0].count == 8, parts[0].allSatisfy(\.isHexDigit), !parts[1].isEmpty, parts[1].allSatisfy(\.isNumber) {
                return true
            }
        }
        return false
    }

    /// Performs one request on the calling thread (blocking) and reports what happened.
    func perform(_ request: HTTPRequest, settings: CurlSettings, cancellation: CancellationFlag) -> HTTPExchange {
        curl_easy_reset(handle)
        let state = CurlTransferState(cancellation: cancellation, settings: settings)
        state.onBodySent = request.onBodySent
        state.bodyObserver = request.bodyObserver
        state.onInterimResponse = request.onInterimResponse
        state.responseBodyObserver = request.responseBodyObserver
        if case .file(let path, let offset, let length) = request.body {
            guard offset >= 0, length >= 0 else {
                return state.failure(TransferError(.invalidRequest, "a negative body range was requested"))
            }
            do {
                state.file = try ReadOnlyFile(path: path)
            } catch {
                return state.failure(TransferError(error))
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
        if settings.caFile == nil, settings.caDirectory == nil, let directory = Self.systemCADirectory {
            // The system's authorities from their hashed directory alone: OpenSSL then reads the
            // one certificate a chain needs, where libcurl's default bundle file is parsed whole
            // (about 140 certificates, 2.3 MB of the upload client's peak) at every connection.
            check(pd_curl_setopt_string(handle, CURLOPT_CAINFO, nil))
            check(pd_curl_setopt_string(handle, CURLOPT_CAPATH, directory))
        }
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
