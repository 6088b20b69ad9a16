import FaultProxy
import Dispatch
import Foundation
import Receiver
import Synchronization
import Testing
@testable import Transfer
import UploadProtocol

/// A large file whose SHA-256 is still being computed when its upload starts: the bytes flow at
/// once without `Idempotency-Key` and `Repr-Digest`, the completing append waits for the digest
/// and carries it, and the receiver checks and dedupes on it at completion.
@Suite struct DeferredDigestTests {
    /// A digest that becomes known only when `release()` is called.
    final class HeldDigest: Sendable {
        private let gate = DispatchSemaphore(value: 0)
        let digest: BackgroundDigest

        init(answer: String) {
            let gate = gate
            digest = BackgroundDigest { () throws(TransferError) -> String in
                // A guard against a hung test, not a timing assertion: the request checks fail instead.
                _ = gate.wait(timeout: .now() + 60)
                return answer
            }
        }

        func release() { gate.signal() }

        /// Releases the digest and waits until it is known, so the request after this sees it
        /// finished (a guard against a hung test, not a timing assertion).
        func releaseAndWait() {
            release()
            let deadline = ContinuousClock.now + .seconds(60)
            while (try? digest.sha256HexIfFinished()) == nil && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.001)
            }
        }
    }

    @Test(arguments: [6, 8])
    func bytesFlowBeforeTheDigestAndTheCompletingAppendCarriesIt(interopVersion: Int) async throws {
        let receiver = try LoopbackReceiver()
        let relay = try HTTPRelay(targetPort: receiver.port)
        defer { relay.stop() }
        let file = try TestFile(size: 6 << 20, seed: 51)
        let sha = try FileDigest.sha256Hex(path: file.path)
        let held = HeldDigest(answer: sha)
        let uploader = Interop.uploader(to: relay.uploadURL, interopVersion: interopVersion)
        // The digest is released only once the server acknowledged bytes sent without it.
        let receipt = try await uploader.upload(file: file.path, filename: "IMG_0001.jpg", verdictJSON: "{}",
                                                digest: held.digest, progress: { _ in held.release() })

        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
        let key = ResumableUpload.Header.idempotencyKey
        #expect(relay.requests("POST").map { $0.head[key] } == [nil])
        let patches = relay.requests("PATCH")
        #expect(patches.map { $0.head[key] } == [nil, sha])
        #expect(patches.last?.head[ResumableUpload.Header.uploadOffset] == String((6 << 20) - UploadSession.deferredDigestTail))
        #expect(try receiver.objects().map(\.idempotencyKey) == [sha])
        #expect(!receiver.log.lines.contains { $0.contains("digest read back") })

        // The same file again, digest known at once: deduplicated on the key the last append carried.
        let again = try await uploader.upload(file: file.path, metadata: UploadMetadata(file: file.path, sha256Hex: sha))
        #expect(again.serverID == receipt.serverID)
        #expect(try receiver.objects().count == 1)
    }

    /// `onBodySent` (where `photodrain upload` starts hashing the next file) fires once for every
    /// request that carried file bytes, never for the empty creation or HEAD.
    @Test func onBodySentFiresOncePerRequestCarryingFileBytes() async throws {
        let receiver = try LoopbackReceiver()
        let relay = try HTTPRelay(targetPort: receiver.port)
        defer { relay.stop() }
        let small = try TestFile(size: 200_000, seed: 61)
        let large = try TestFile(size: 6 << 20, seed: 62)
        let uploader = Interop.uploader(to: relay.uploadURL)
        let calls = Mutex(0)
        for file in [small, large] {
            let receipt = try await uploader.upload(file: file.path, filename: "IMG_0003.jpg", verdictJSON: "{}",
                                                    digest: BackgroundDigest(path: file.path),
                                                    onBodySent: { calls.withLock { $0 += 1 } })
            #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
        }
        let posts = relay.requests("POST")
        #expect(posts.map { $0.head["content-length"] } == ["200000", "0"])
        let patches = relay.requests("PATCH").count
        #expect(patches >= 1)
        #expect(calls.withLock { $0 } == 1 + patches)
    }

    /// A large file whose digest nobody started is hashed from the bytes its appends send, also
    /// when the network cuts them and they are resumed: the file is never read a second time by a
    /// hasher of its own, and the completing append carries the right digest.
    @Test func aLargeFileIsHashedFromTheBytesItsAppendsSendEvenWhenCut() async throws {
        let receiver = try LoopbackReceiver()
        let relay = try HTTPRelay(targetPort: receiver.port)
        defer { relay.stop() }
        let plan = FaultPlan { connection in
            connection == 0 ? .cut(afterBytes: 3_000_000, direction: .upstream) : nil
        }
        let proxy = try FaultProxy(targetPort: relay.port, plan: plan)
        defer { proxy.stop() }
        let file = try TestFile(size: 9 << 20, seed: 53)
        let sha = try FileDigest.sha256Hex(path: file.path)
        let hashedOnItsOwn = Mutex(false)
        let path = file.path
        let digest = BackgroundDigest(startingNow: false) { () throws(TransferError) -> String in
            hashedOnItsOwn.withLock { $0 = true }
            return try FileDigest.sha256Hex(path: path)
        }
        let uploader = Interop.uploader(to: "http://127.0.0.1:\(proxy.port)/uploads")
        let receipt = try await uploader.upload(file: file.path, filename: "IMG_0004.jpg", verdictJSON: "{}", digest: digest)

        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
        #expect(proxy.connectionCount >= 2, "the plan's cut did not happen")
        #expect(!hashedOnItsOwn.withLock { $0 })
        let key = ResumableUpload.Header.idempotencyKey
        let patches = relay.requests("PATCH")
        #expect(patches.count >= 3)  // cut, resumed, completing
        #expect(patches.last?.head[key] == sha)
        #expect(patches.dropLast().allSatisfy { $0.head[key] == nil })
        #expect(try receiver.objects().map(\.idempotencyKey) == [sha])
    }

    /// The hasher's digest, once it finished, is what the completing append carries: one that does
    /// not match the bytes (a file changed after it was hashed) is refused and nothing is stored.
    @Test func aDigestThatDoesNotMatchIsRefusedAtCompletion() async throws {
        let receiver = try LoopbackReceiver()
        let file = try TestFile(size: 5 << 20, seed: 52)
        let held = HeldDigest(answer: String(repeating: "0", count: 64))
        let uploader = Interop.uploader(to: receiver.uploadURL)
        do {
            _ = try await uploader.upload(file: file.path, filename: "IMG_0002.jpg", verdictJSON: "{}",
                                          digest: held.digest, progress: { _ in held.releaseAndWait() })
            Issue.record("an upload with a wrong digest succeeded")
        } catch {
            #expect(error.classification == .permanent)
            #expect(error.httpStatus == 400)
        }
        #expect(try receiver.objects().isEmpty)
    }

    /// A file rewritten while its appends were being sent (and hashed on the way) fails with a
    /// clear error instead of completing with a digest of a mix of versions; nothing is stored.
    @Test func aFileRewrittenWhileItsBytesAreSentFailsAndStoresNothing() async throws {
        let receiver = try LoopbackReceiver()
        let file = try TestFile(size: 6 << 20, seed: 54)
        let path = file.path
        let uploader = Interop.uploader(to: receiver.uploadURL)
        let rewritten = Mutex(false)
        do {
            _ = try await uploader.upload(
                file: path, filename: "IMG_0005.jpg", verdictJSON: "{}", digest: BackgroundDigest(path: path, startingNow: false),
                progress: { _ in
                    // After the first append was acknowledged: change a byte it sent, in place.
                    rewritten.withLock { done in
                        guard !done, let handle = FileHandle(forUpdatingAtPath: path) else { return }
                        handle.seek(toFileOffset: 1_000)
                        handle.write(Data([0x5A]))
                        try? handle.close()
                        done = true
                    }
                })
            Issue.record("an upload of a file rewritten mid-way succeeded")
        } catch {
            #expect(error.code == .fileUnreadable)
            #expect(error.message.contains("changed"))
        }
        #expect(rewritten.withLock { $0 })
        #expect(try receiver.objects().isEmpty)
    }
}
