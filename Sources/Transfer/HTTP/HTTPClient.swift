import Foundation
import Synchronization
import SystemSupport

/// An HTTP/1.1 client on libcurl easy handles. Each request runs `curl_easy_perform` on a thread
/// of its own (never on Swift's cooperative pool) and is bridged back with a continuation. Handles
/// are kept in a small pool after use, so the next request reuses the open connection. Redirects
/// are never followed, TLS peers are always verified (against `Options.trust`), and libcurl reads
/// the proxy environment itself.
public final class HTTPClient: Sendable {
    /// Timeouts and limits.
    public struct Options: Sendable {
        /// How long establishing a connection may take.
        public var connectTimeout: Duration
        /// A transfer slower than `lowSpeedLimit` bytes/s for this long is abandoned as stalled.
        public var stallTimeout: Duration
        /// The rate below which a transfer counts as stalled, in bytes per second.
        public var lowSpeedLimit: Int
        /// libcurl's upload buffer (bytes read from the file per callback).
        public var uploadBufferSize: Int
        /// The most response-header bytes accepted per exchange.
        public var maxHeaderBytes: Int
        /// How much of a response body is kept (the rest is read and dropped).
        public var maxBodyBytes: Int
        /// Idle handles (and so connections) kept for reuse.
        public var maxIdleHandles: Int
        /// The `User-Agent` sent.
        public var userAgent: String
        /// The certificate authorities https servers are verified against.
        public var trust: TrustedAuthorities
        /// The upload budget request bodies share (`--bwlimit`); nil for none.
        public var bandwidth: BandwidthLimit?

        /// Defaults: 10 s to connect, stalled below 1 byte/s for 30 s, 64 KiB upload buffer
        /// (libcurl's own; 256 KiB cost the client about 5% more CPU on loopback uploads: each
        /// piece read from the file falls out of cache before the socket copies it); the
        /// authorities `$SSL_CERT_FILE` and `$SSL_CERT_DIR` name, else the system's.
        public init(connectTimeout: Duration = .seconds(10), stallTimeout: Duration = .seconds(30),
                    lowSpeedLimit: Int = 1, uploadBufferSize: Int = 64 * 1024, maxHeaderBytes: Int = 64 * 1024,
                    maxBodyBytes: Int = 64 * 1024, maxIdleHandles: Int = 8, userAgent: String = "photodrain",
                    trust: TrustedAuthorities = .fromEnvironment(ProcessInfo.processInfo.environment)) {
            self.connectTimeout = connectTimeout
            self.stallTimeout = stallTimeout
            self.lowSpeedLimit = lowSpeedLimit
            self.uploadBufferSize = uploadBufferSize
            self.maxHeaderBytes = maxHeaderBytes
            self.maxBodyBytes = maxBodyBytes
            self.maxIdleHandles = maxIdleHandles
            self.userAgent = userAgent
            self.trust = trust
        }
    }

    private let settings: CurlSettings
    private let maxIdleHandles: Int
    private let idleHandles = Mutex<[CurlEasy]>([])

    /// Creates a client.
    public init(options: Options = Options()) {
        settings = CurlSettings(
            connectTimeoutMilliseconds: max(1, Int(options.connectTimeout.milliseconds)),
            lowSpeedLimitBytesPerSecond: max(1, options.lowSpeedLimit),
            lowSpeedTimeSeconds: max(1, Int(options.stallTimeout.milliseconds) / 1000),
            uploadBufferSize: min(max(options.uploadBufferSize, 16 * 1024), 2 * 1024 * 1024),
            maxHeaderBytes: max(1024, options.maxHeaderBytes),
            maxBodyBytes: max(0, options.maxBodyBytes),
            userAgent: options.userAgent,
            caFile: options.trust.file,
            caDirectory: options.trust.directory,
            bandwidth: options.bandwidth)
        maxIdleHandles = max(0, options.maxIdleHandles)
    }

    /// Sends a request and returns the final response, whatever its status.
    /// Throws `TransferError` when no final response arrived (or the task was cancelled).
    public func send(_ request: HTTPRequest) async throws(TransferError) -> HTTPResponse {
        try await exchange(request).result.get()
    }

    /// Sends a request and reports everything that came back, including the interim responses
    /// received before a failure. Cancelling the calling task aborts the transfer.
    public func exchange(_ request: HTTPRequest) async -> HTTPExchange {
        let flag = CancellationFlag()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<HTTPExchange, Never>) in
                let thread = Thread { [self] in
                    continuation.resume(returning: self.performBlocking(request, cancellation: flag))
                }
                thread.name = "photodrain-transfer"
                thread.start()
            }
        } onCancel: {
            flag.cancel()
        }
    }

    /// Runs one request on the calling thread. Blocks: call it only from a dedicated thread.
    private func performBlocking(_ request: HTTPRequest, cancellation: CancellationFlag) -> HTTPExchange {
        guard let easy = idleHandles.withLock({ $0.popLast() }) ?? CurlEasy() else {
            return HTTPExchange(interimResponses: [], bytesSent: 0,
                                result: .failure(TransferError(.transportFailure, "libcurl could not create a handle")))
        }
        let outcome = easy.perform(request, settings: settings, cancellation: cancellation)
        idleHandles.withLock { handles in
            if handles.count < maxIdleHandles { handles.append(easy) }
        }
        return outcome
    }
}
