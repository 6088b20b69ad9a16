import AssetStore
import Foundation
import Synchronization
import Testing
import Transfer
@testable import Drain

/// A destination that plays a script. Until it has refused `awayForChecks` reachability checks it
/// behaves like a server restarting behind a proxy: every upload and every check loses its
/// connection. After that, each upload call takes the next scripted failure, or succeeds when the
/// script is used up, and checks succeed.
final class ScriptedDestination: UploadDestination {
    let endpoint = "http://scripted.invalid/uploads"
    private let uploadFailures: Mutex<[TransferError]>
    private let checksLeftAway: Mutex<Int>
    /// When each upload call started, in order.
    let uploadCalls = Mutex<[ContinuousClock.Instant]>([])
    static let lost = TransferError(.connectionLost, "the connection was lost")

    init(uploads: [TransferError], awayForChecks: Int = 0) {
        uploadFailures = Mutex(uploads)
        checksLeftAway = Mutex(awayForChecks)
    }

    private var away: Bool { checksLeftAway.withLock { $0 > 0 } }

    func upload(file path: String, metadata: UploadMetadata, resumeFrom: UploadCheckpoint?,
                progress: @escaping (UploadProgress) -> Void,
                checkpoint: @escaping (UploadCheckpoint) throws -> Void) async throws(TransferError) -> UploadReceipt {
        uploadCalls.withLock { $0.append(.now) }
        if away { throw Self.lost }
        if let failure = uploadFailures.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { throw failure }
        return UploadReceipt(serverID: "id-\(metadata.filename)", status: 201, headers: [:], bytesSent: 1,
                             location: nil, resumable: false)
    }

    func cancel(_ checkpoint: UploadCheckpoint) async throws(TransferError) {}

    func checkReachable() async throws(TransferError) {
        let refused = checksLeftAway.withLock { left -> Bool in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
        if refused { throw Self.lost }
    }

    func checkpoint(restoring stored: String, confirmedOffset: Int64) -> UploadCheckpoint? { nil }
}

@Suite struct DrainRunnerTests {
    static let unavailable = TransferError.forStatus(503)
    /// What libcurl's CURLE_PEER_FAILED_VERIFICATION becomes: a self-signed certificate, or one
    /// from a private CA the client was not given.
    static let certificateUnverified = TransferError(.tlsFailure, "the server's certificate could not be verified", curlCode: 60)
    /// CURLE_SSL_CONNECT_ERROR: the handshake broke off.
    static let handshakeFailed = TransferError(.tlsFailure, "the TLS handshake failed", curlCode: 35, classification: .transient)

    private func drain(photos: Int, destination: ScriptedDestination,
                       configure: (inout DrainOptions) -> Void = { _ in }) async throws -> (DrainOutcome, AssetStore, Library) {
        let library = try Library(photos: photos)
        let store = try library.store()
        var options = DrainOptions(destination: destination)
        options.slots = 1
        options.probeInterval = .milliseconds(50)
        options.retryBackoff = .milliseconds(100)
        configure(&options)
        let runner = DrainRunner(store: store, analyzer: CountingAnalyzer(), options: options)
        let outcome = await runner.run { _ in }
        return (outcome, store, library)
    }

    /// A server restarting behind a proxy: the proxy accepts, then closes every connection, the
    /// upload's and the reachability check's alike. That is the destination being away, not the
    /// photo failing, so no attempt is charged however often it happens.
    @Test func connectionsLostWhileTheDestinationIsAwayChargeNothing() async throws {
        let destination = ScriptedDestination(uploads: [], awayForChecks: 4)
        let (outcome, store, library) = try await drain(photos: 1, destination: destination)
        defer { withExtendedLifetime(library) {} }
        #expect(outcome == .finished)
        let asset = try #require(try store.asset(path: "p000.jpg"))
        #expect(asset.uploadedAt != nil)
        #expect(asset.attempts == 0 && asset.failed == false)
        #expect(destination.uploadCalls.withLock { $0.count } == 2)
    }

    /// A destination that answers, but with errors: each failure counts, and uploads pause for
    /// the backoff (doubling) before the next try, so a burst of 503s does not use up the attempts.
    @Test func countedFailuresPauseUploadsWithADoublingBackoff() async throws {
        let destination = ScriptedDestination(uploads: [Self.unavailable, Self.unavailable, Self.unavailable])
        let (outcome, store, library) = try await drain(photos: 1, destination: destination)
        defer { withExtendedLifetime(library) {} }
        #expect(outcome == .finished)
        let asset = try #require(try store.asset(path: "p000.jpg"))
        #expect(asset.uploadedAt != nil && asset.attempts == 3)
        let calls = destination.uploadCalls.withLock { $0 }
        #expect(calls.count == 4)
        let gaps = zip(calls.dropFirst(), calls).map { $0 - $1 }
        // At least 100, 200 and 400 ms apart (a pause is a lower bound, never an upper one).
        for (gap, least) in zip(gaps, [100, 200, 400]) { #expect(gap >= .milliseconds(least)) }
    }

    /// A wrong token (401/403) or a URL with no upload endpoint (404) refuses
    /// every photo alike. The drain stops with `refused` (the CLI exits 1) and charges nothing,
    /// instead of failing the whole library for good and reporting success. So
    /// does a server certificate that fails verification (a home server's self-signed one); and
    /// an answer like a web page's (a captive portal) and a receipt without proof.
    @Test(arguments: [TransferError.forStatus(401), TransferError.forStatus(403), TransferError.forStatus(404, creation: true),
                      certificateUnverified,
                      TransferError(.notAReceiver, "answered like a web page, not an upload receiver: a captive portal or a wrong URL?"),
                      TransferError(.unverifiedReceipt, "the server accepted the upload but did not show that it holds these bytes"),
                      TransferError.forStatus(507, headers: ["content-type": "application/problem+json"],
                                              body: Array(#"{"type":"tag:photodrain.invalid,2026:quota-exceeded","detail":"account anna holds 9 bytes of its 10-byte quota"}"#.utf8))])
    func aDestinationThatRefusesEveryUploadStopsTheDrainAndChargesNothing(refusal: TransferError) async throws {
        let destination = ScriptedDestination(uploads: Array(repeating: refusal, count: 10))
        let (outcome, store, library) = try await drain(photos: 3, destination: destination) { $0.slots = 3 }
        defer { withExtendedLifetime(library) {} }
        guard case .refused(let message) = outcome else {
            Issue.record("the drain ended \(outcome), not refused")
            return
        }
        #expect(message.hasPrefix(refusal.code.rawValue))
        for asset in try store.assets() {
            #expect(asset.attempts == 0 && asset.failed == false && asset.uploadedAt == nil)
        }
        #expect(try store.counts().failed == 0)
        // Once the destination accepts again, the next drain uploads every photo.
        #expect(await Self.rerun(store: store, destination: ScriptedDestination(uploads: [])) == .finished)
        #expect(try store.counts().uploaded == 3)
    }

    /// A TLS handshake that broke off is the network's doing, not the destination's configuration:
    /// it counts against the photo like any transient failure, and the drain goes on.
    @Test func aBrokenTLSHandshakeIsChargedNotARefusal() async throws {
        let destination = ScriptedDestination(uploads: [Self.handshakeFailed])
        let (outcome, store, library) = try await drain(photos: 1, destination: destination)
        defer { withExtendedLifetime(library) {} }
        #expect(outcome == .finished)
        let asset = try #require(try store.asset(path: "p000.jpg"))
        #expect(asset.uploadedAt != nil && asset.attempts == 1 && !asset.failed)
    }

    private static func rerun(store: AssetStore, destination: ScriptedDestination) async -> DrainOutcome {
        var options = DrainOptions(destination: destination)
        options.slots = 1
        return await DrainRunner(store: store, analyzer: CountingAnalyzer(), options: options).run { _ in }
    }

    /// A drain killed after the server answered but before the answer was recorded leaves a
    /// finished job. The next drain records it (the photo is uploaded, once) instead of waiting
    /// forever for a photo no one will claim.
    @Test func aFinishedJobLeftByAKilledRunnerIsRecordedNotResent() async throws {
        let library = try Library(photos: 2)
        defer { withExtendedLifetime(library) {} }
        let store = try library.store()
        _ = try store.scan()
        for asset in try store.claimUnanalyzed(limit: 1) {
            _ = try store.bankVerdict(BankedVerdict(json: "{}", label: "no-faces", faceCount: 0, score: 0), for: asset)
        }
        let destination = ScriptedDestination(uploads: [])
        let claimed = try #require(try store.claimForUpload(limit: 1).first)
        _ = try store.createJob(for: claimed, destination: destination.endpoint, inflightLimit: .max)
        let job = try #require(try store.claimJobsToPerform(limit: 1).first)
        #expect(try store.finishJob(job, result: .succeeded(status: 201, serverID: "kept", headers: [:])))

        var options = DrainOptions(destination: destination)
        options.slots = 1
        let runner = DrainRunner(store: store, analyzer: CountingAnalyzer(), options: options)
        // A hang would be the bug: stop the runner after a generous while, which fails the test.
        let watchdog = Task { try await Task.sleep(for: .seconds(30)); runner.stop(signal: SIGTERM) }
        let outcome = await runner.run { _ in }
        watchdog.cancel()
        #expect(outcome == .finished)
        let recorded = try #require(try store.asset(path: claimed.path))
        #expect(recorded.uploadedAt != nil && recorded.serverID == "kept" && recorded.attempts == 0)
        // Only the other photo went over the wire.
        #expect(destination.uploadCalls.withLock { $0.count } == 1)
        #expect(try store.counts().uploaded == 2)
    }


    @Test func onlyFailuresWithoutAnHTTPAnswerMeanUnreachable() {
        #expect(Reachability.isUnreachable(TransferError(.connectionFailed, "x")))
        #expect(Reachability.isUnreachable(TransferError(.connectionLost, "x")))
        #expect(Reachability.isUnreachable(TransferError(.timedOut, "x")))
        #expect(!Reachability.isUnreachable(TransferError.forStatus(503)))
        #expect(!Reachability.isUnreachable(TransferError.forStatus(401)))
    }
}
