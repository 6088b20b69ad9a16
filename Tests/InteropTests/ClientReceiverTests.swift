import Foundation
import Receiver
import Testing
import Transfer
import UploadProtocol

/// The real client (`ResumableUploader`) against the real receiver (`ReceiverServer`), in one
/// process on loopback: every interop version both speak, plain uploads, and a server without
/// the protocol. Every file must arrive byte for byte.
@Suite struct ClientReceiverTests {
    @Test(arguments: [3, 5, 6, 8], Interop.sizes)
    func resumableUploadArrivesByteIdentical(interopVersion: Int, size: Int) async throws {
        let receiver = try LoopbackReceiver()
        let file = try TestFile(size: size, seed: UInt64(size * 10 + interopVersion))
        let uploader = Interop.uploader(to: receiver.uploadURL, interopVersion: interopVersion)

        let receipt = try await uploader.upload(file: file.path, metadata: try file.metadata())

        #expect(receipt.resumable)
        #expect(receipt.status == 201 || receipt.status == 204)
        #expect(receipt.location?.hasPrefix(receiver.uploadURL + "/") == true)
        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
        let objects = try receiver.objects()
        #expect(objects.map(\.id) == [receipt.serverID].compactMap { $0 })
        #expect(objects.first?.filename == "IMG_0001.jpg")
        #expect(objects.first?.verdict == #"{"faces":2,"label":"keep","score":0.91}"#)
        // Optimistic creation sends the whole file at once; above the threshold the resource is
        // created empty and the bytes follow in one append.
        let optimistic = Int64(size) <= Interop.optimisticLimit
        #expect(receiver.requests.map(\.method) == (optimistic ? ["OPTIONS", "POST"] : ["OPTIONS", "POST", "PATCH"]))
        #expect(receipt.bytesSent == Int64(size))
    }

    @Test(arguments: [3, 6, 8], [100_000, 9 << 20])
    func serverAnsweringOptionsWith501GetsAPlainUpload(interopVersion: Int, size: Int) async throws {
        let receiver = try LoopbackReceiver()
        let relay = try HTTPRelay(targetPort: receiver.port, behaviour: .optionsNotImplemented)
        defer { relay.stop() }
        let file = try TestFile(size: size, seed: UInt64(size + interopVersion))
        let uploader = Interop.uploader(to: relay.uploadURL, interopVersion: interopVersion, acceptUnverified: true)

        let receipt = try await uploader.upload(file: file.path, metadata: try file.metadata())

        #expect(!receipt.resumable)
        // serve names the stored content's digest even to a plain upload: the receipt is proven.
        #expect(receipt.proof == .verified)
        #expect(receipt.status == 201)
        #expect(relay.methods == ["OPTIONS", "POST"])
        #expect(receiver.requests == [LoopbackReceiver.LoggedRequest(method: "POST", path: "/uploads", status: "201")])
        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
        #expect(try receiver.objects().count == 1)
        #expect(receiver.partialUploadSizes().isEmpty)
    }

    /// A request whose interop version the receiver does not know (or that lost the field on the
    /// way) is a plain upload: no 104, no 400, the body stored as sent.
    @Test(arguments: [nil, "99", "2"] as [String?])
    func unknownOrMissingInteropVersionIsAPlainUpload(version: String?) async throws {
        let receiver = try LoopbackReceiver()
        let relay = try HTTPRelay(targetPort: receiver.port, behaviour: .init(rewrite: { head, _ in
            head[ResumableUpload.Header.interopVersion] = version
        }))
        defer { relay.stop() }
        let file = try TestFile(size: 300_000, seed: 77)
        let uploader = Interop.uploader(to: relay.uploadURL)

        let receipt = try await uploader.upload(file: file.path, metadata: try file.metadata())

        #expect(receiver.requests.map(\.method) == ["OPTIONS", "POST"])
        #expect(receipt.status == 201)
        // The receiver answered as to a plain upload: the Location names the object, not an upload.
        let id = try #require(receipt.serverID)
        #expect(receipt.headers["location"] == "/objects/\(id)")
        #expect(try receiver.holds(object: id, identicalTo: file))
        #expect(receiver.partialUploadSizes().isEmpty)
    }

    @Test func plainUploadByPUTArrivesByteIdentical() async throws {
        let receiver = try LoopbackReceiver()
        let relay = try HTTPRelay(targetPort: receiver.port, behaviour: .optionsNotImplemented)
        defer { relay.stop() }
        let file = try TestFile(size: 2_000_000, seed: 5)
        var configuration = UploadConfiguration(endpoint: relay.uploadURL)
        configuration.plainUploadMethod = "PUT"
        configuration.acceptUnverified = true
        let uploader = ResumableUploader(configuration: configuration)

        let receipt = try await uploader.upload(file: file.path, metadata: try file.metadata())

        #expect(!receipt.resumable)
        #expect(relay.methods == ["OPTIONS", "PUT"])
        #expect(try receiver.holds(object: receipt.serverID, identicalTo: file))
    }
}
