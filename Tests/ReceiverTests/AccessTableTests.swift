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

    /// The table's cells, written out here rather than asked of `TokenScope.allows` (the code
    /// under test: a scope check that let everything through would otherwise expect everything).
    static func expectAllowed(_ scope: TokenScope, _ needs: TokenScope) -> Bool {
        switch (scope, needs) {
        case (.upload, .upload), (.read, .upload), (.read, .read), (.admin, _): return true
        case (.upload, .read), (.upload, .admin), (.read, .admin): return false
        }
    }

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
                if Self.expectAllowed(device.scope, endpoint.needs) {
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

    /// Every endpoint that names an upload, an object or a digest, tried by each of one account's
    /// tokens with another account's (and another device's) ids and digests: the answer is the
    /// one a never-stored id or digest gets, byte for byte, except where an admin may read every
    /// account's objects.
    @Test func anotherAccountsIdsAndDigestsAnswerAsOnesThatDoNotExist() throws {
        let family = try Family()
        defer { family.receiver.stop(); family.receiver.removeDirectory() }
        let naming = Self.endpoints.filter { endpoint in
            let probe = Context(objectID: "I", digest: "D", uploadPath: "/uploads/U", seed: 0)
            let path = endpoint.request(probe).1
            return path.contains("I") || path.contains("D") || path.contains("U")
        }
        #expect(naming.count == 8)
        let never = Context(objectID: String(repeating: "ab", count: 16), digest: String(repeating: "cd", count: 32),
                            uploadPath: "/uploads/" + String(repeating: "ef", count: 16), seed: 1)
        var seed: UInt64 = 50_000
        for endpoint in naming {
            for device in [family.phone, family.laptop, family.admin] {
                seed += 1
                let ben = try family.context(for: family.benPhone, seed: seed)
                var nothing = never
                nothing.seed = seed
                let foreign = try family.send(endpoint, ben, as: device)
                let missing = try family.send(endpoint, nothing, as: device)
                let adminReads = device.scope == .admin && endpoint.needs == .read
                if adminReads {
                    #expect(foreign.status == endpoint.allowed, "\(endpoint) as admin on ben's: \(foreign.status)")
                } else {
                    #expect(foreign.status == missing.status, "\(endpoint) with \(device.scope) on ben's: \(foreign.status) vs \(missing.status)")
                    #expect(foreign.body == missing.body, "\(endpoint) with \(device.scope): \(foreign.text) vs \(missing.text)")
                    #expect(foreign["content-type"] == missing["content-type"])
                    #expect(foreign.status == 404 || foreign.status == 403, "\(endpoint) with \(device.scope): \(foreign.status)")
                }
                // Ben's upload is untouched whoever asked: still there, still at 100 bytes.
                let kept = try family.receiver.client().request("HEAD", ben.uploadPath,
                                                                headers: [("Upload-Draft-Interop-Version", "8")] + family.benPhone.authorization)
                if endpoint.description.hasPrefix("DELETE") || endpoint.description.hasPrefix("PATCH") || endpoint.description.hasPrefix("HEAD /uploads") {
                    #expect(kept.status == 204 && kept["upload-offset"] == "100", "\(endpoint) by \(device.name) touched ben's upload")
                }
            }
        }
        // Within an account, a device's uploads are its own: the laptop cannot touch the phone's.
        let phones = try family.context(for: family.phone, seed: 99)
        for endpoint in naming where endpoint.request(phones).1.hasPrefix("/uploads/") {
            let other = try family.send(endpoint, phones, as: family.laptop)
            var nothing = never
            nothing.seed = 99
            let missing = try family.send(endpoint, nothing, as: family.laptop)
            #expect(other.status == 404 && other.body == missing.body, "\(endpoint): \(other.status)")
            #expect(try family.send(endpoint, phones, as: family.admin).status == endpoint.allowed)
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

        init(directory: String = TestReceiver.makeTemporaryDirectory(),
             configure: (inout ReceiverConfiguration) -> Void = { _ in }) throws {
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

        /// Sends an endpoint's request with that context as `device`.
        func send(_ endpoint: Endpoint, _ context: Context, as device: Device) throws -> RawHTTPClient.Response {
            let (method, path, headers, body) = endpoint.request(context)
            return try receiver.client().request(method, path, headers: headers + device.authorization, body: body)
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
