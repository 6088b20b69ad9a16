import Foundation
import Receiver
import Testing
import UploadProtocol

/// Every endpoint tried with every scope: what a device token may do (`TokenScope`), and the
/// `403` with a problem body naming the scope needed for what it may not.
@Suite struct AccessTableTests {
    /// One request of the table, made for a token with what that token's account holds.
    struct Endpoint: Sendable, CustomStringConvertible {
        var description: String
        /// The scope it needs.
        var needs: TokenScope
        /// The status it answers when allowed.
        var allowed: Int
        /// Makes the request: method, path, headers, body, given the context.
        var request: @Sendable (Context) -> (String, String, [(String, String)], [UInt8]?)
    }

    /// What a cell's request may name: an object and its digest, and an upload made by the token.
    struct Context: Sendable {
        var objectID: String
        var digest: String
        var uploadPath: String
        var seed: UInt64
    }

    static let version = 8

    static let endpoints: [Endpoint] = [
        Endpoint(description: "OPTIONS /uploads", needs: .upload, allowed: 200) { _ in ("OPTIONS", "/uploads", [], nil) },
        Endpoint(description: "POST /uploads (plain)", needs: .upload, allowed: 201) { context in
            ("POST", "/uploads", [], TestReceiver.bytes(3_000, seed: context.seed))
        },
        Endpoint(description: "POST /uploads (resumable)", needs: .upload, allowed: 201) { context in
            ("POST", "/uploads", ResumableUploadTests.creationHeaders(version: version, complete: true), TestReceiver.bytes(3_000, seed: context.seed))
        },
        Endpoint(description: "HEAD /uploads/<id>", needs: .upload, allowed: 204) { context in
            ("HEAD", context.uploadPath, [("Upload-Draft-Interop-Version", String(version))], nil)
        },
        Endpoint(description: "PATCH /uploads/<id>", needs: .upload, allowed: 204) { context in
            ("PATCH", context.uploadPath, ResumableUploadTests.patchHeaders(version: version, offset: 100, complete: false),
             TestReceiver.bytes(100, seed: context.seed))
        },
        Endpoint(description: "DELETE /uploads/<id>", needs: .upload, allowed: 204) { context in
            ("DELETE", context.uploadPath, [("Upload-Draft-Interop-Version", String(version))], nil)
        },
        Endpoint(description: "HEAD /objects/by-digest", needs: .upload, allowed: 200) { context in
            ("HEAD", "/objects/by-digest/\(context.digest)", [], nil)
        },
        Endpoint(description: "GET /objects/by-digest", needs: .upload, allowed: 200) { context in
            ("GET", "/objects/by-digest/\(context.digest)", [], nil)
        },
        Endpoint(description: "GET /objects", needs: .read, allowed: 200) { _ in ("GET", "/objects", [], nil) },
        Endpoint(description: "HEAD /objects", needs: .read, allowed: 200) { _ in ("HEAD", "/objects", [], nil) },
        Endpoint(description: "GET /objects/<id>", needs: .read, allowed: 200) { context in ("GET", "/objects/\(context.objectID)", [], nil) },
        Endpoint(description: "HEAD /objects/<id>", needs: .read, allowed: 200) { context in ("HEAD", "/objects/\(context.objectID)", [], nil) },
        Endpoint(description: "GET /objects/<id>/content", needs: .read, allowed: 200) { context in
            ("GET", "/objects/\(context.objectID)/content", [], nil)
        },
    ]

    @Test func everyEndpointWithEveryScope() throws {
        let family = try Family()
        defer { family.receiver.stop(); family.receiver.removeDirectory() }
        var seed: UInt64 = 1_000
        for endpoint in Self.endpoints {
            for device in [family.phone, family.laptop, family.admin] {
                seed += 1
                let context = try family.context(for: device, seed: seed)
                let (method, path, headers, body) = endpoint.request(context)
                let response = try family.receiver.client().request(method, path, headers: headers + device.authorization, body: body)
                if device.scope.allows(endpoint.needs) {
                    #expect(response.status == endpoint.allowed, "\(endpoint) with \(device.scope): \(response.status) \(response.text)")
                } else {
                    #expect(response.status == 403, "\(endpoint) with \(device.scope): \(response.status)")
                    #expect(response["content-type"] == "application/problem+json")
                    #expect(response["www-authenticate"] == "Bearer error=\"insufficient_scope\", scope=\"\(endpoint.needs.rawValue)\"")
                    if method != "HEAD" {
                        let problem = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
                        #expect(problem["status"] as? Int == 403)
                        #expect(problem["scope"] as? String == endpoint.needs.rawValue)
                        let detail = try #require(problem["detail"] as? String)
                        #expect(detail.contains("needs a token with the \(endpoint.needs.rawValue) scope"), "\(detail)")
                        #expect(detail.contains("device \(device.name)"))
                        #expect(!detail.contains(device.token))
                    }
                }
            }
        }
    }

    /// Two accounts and three devices on one receiver, their tokens made by `AccountBook` as
    /// `serve tokens add` makes them.
    final class Family {
        struct Device {
            var account: String
            var name: String
            var scope: TokenScope
            var token: String
            var authorization: [(String, String)] { [("Authorization", "Bearer \(token)")] }
        }

        let receiver: TestReceiver
        let phone: Device
        let laptop: Device
        let admin: Device
        let benPhone: Device

        init(configure: (inout ReceiverConfiguration) -> Void = { _ in }) throws {
            let directory = TestReceiver.makeTemporaryDirectory()
            func add(_ account: String, _ device: String, _ scope: TokenScope) throws -> Device {
                let token = try AccountBook.edit(directory: directory) { (book: inout AccountBook) throws(ReceiverError) in
                    if !book.hasAccount(account) { try book.addAccount(account, now: Date()) }
                    return try book.addToken(account: account, device: device, scope: scope, now: Date()).token
                }
                return Device(account: account, name: device, scope: scope, token: token)
            }
            phone = try add("anna", "anna-phone", .upload)
            laptop = try add("anna", "anna-laptop", .read)
            admin = try add("anna", "anna-admin", .admin)
            benPhone = try add("ben", "ben-phone", .upload)
            receiver = try TestReceiver(directory: directory, configure: configure)
        }

        /// An object stored by `device` (its account's), its digest, and a partial upload of 100
        /// bytes made by `device`.
        func context(for device: Device, seed: UInt64) throws -> Context {
            let body = TestReceiver.bytes(2_000, seed: seed + 7_000_000)
            let stored = try receiver.client().request("POST", "/uploads", headers: device.authorization, body: body)
            let id = try #require(stored["x-server-resource-id"], "\(stored.status) \(stored.text)")
            let created = try receiver.client().request("POST", "/uploads",
                                                        headers: ResumableUploadTests.creationHeaders(version: 8, complete: false) + device.authorization,
                                                        body: TestReceiver.bytes(100, seed: seed + 9_000_000))
            return Context(objectID: id, digest: Digest.hex(Digest.sha256(body)),
                           uploadPath: try ResumableUploadTests.path(of: created["location"]), seed: seed)
        }
    }
}
