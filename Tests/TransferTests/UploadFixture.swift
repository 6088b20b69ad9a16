import Transfer
import UploadProtocol

/// A file to upload, a fake server, and an uploader pointed at it, for one test.
final class UploadFixture {
    let server: FakeResumableServer
    let path: String
    let bytes: [UInt8]
    let metadata: UploadMetadata

    /// Starts a server with `behaviour` and writes a file of `size` deterministic bytes.
    init(size: Int, behaviour: FakeResumableServer.Behaviour = .init(), name: String = "IMG 0001 é.jpg") throws {
        guard let server = FakeResumableServer(behaviour: behaviour) else { throw FixtureError.noLoopbackSocket }
        self.server = server
        bytes = TemporaryFile.pattern(count: size, seed: UInt32(truncatingIfNeeded: size))
        path = try TemporaryFile.make(bytes: bytes, name: name)
        metadata = UploadMetadata(filename: name, sha256Hex: try FileDigest.sha256Hex(path: path),
                                  verdictJSON: #"{"faces":1,"label":"keep","score":0.93}"#)
    }

    deinit {
        server.stop()
        TemporaryFile.remove(path)
    }

    /// An uploader for this server: no backoff, a 64 KiB optimistic limit unless told otherwise.
    func uploader(interopVersion: Int = 6, token: String? = nil, optimisticLimit: Int64 = 64 * 1024,
                  maxResumes: Int = 5, acceptUnverified: Bool = false) -> ResumableUploader {
        ResumableUploader(configuration: UploadConfiguration(
            endpoint: server.endpoint, interopVersion: interopVersion, token: token.flatMap(BearerToken.init),
            optimisticCreationLimit: optimisticLimit, maxResumesPerUpload: maxResumes, resumeBackoff: .zero,
            acceptUnverified: acceptUnverified))
    }

    /// The requests with the given method.
    func requests(_ method: String) -> [FakeResumableServer.RecordedRequest] {
        server.requests.filter { $0.method == method }
    }
}

/// Why a fixture could not be set up.
enum FixtureError: Error {
    case noLoopbackSocket
}
