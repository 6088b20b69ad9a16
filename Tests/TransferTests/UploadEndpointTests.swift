import Testing
@testable import Transfer

@Suite struct UploadEndpointTests {
    @Test(arguments: [
        ("/files/u1", "http://127.0.0.1:8080/files", "http://127.0.0.1:8080/files/u1"),
        ("u2", "http://127.0.0.1:8080/files/", "http://127.0.0.1:8080/files/u2"),
        ("https://other.example/up/9", "http://127.0.0.1:8080/files", "https://other.example/up/9"),
        (" /files/u3 ", "https://h.example/files", "https://h.example/files/u3"),
    ])
    func locationsResolveAgainstTheRequest(location: String, base: String, expected: String) {
        #expect(UploadEndpoint.resolve(location: location, against: base) == expected)
    }

    @Test(arguments: ["", "ftp://h.example/x", "javascript:alert(1)"])
    func unusableLocationsAreRejected(location: String) {
        #expect(UploadEndpoint.resolve(location: location, against: "http://127.0.0.1/files") == nil)
    }

    @Test(arguments: [
        ("http://127.0.0.1:8080/files", "http://127.0.0.1:8080"),
        ("HTTPS://Photos.Example/up", "https://photos.example"),
        ("http://h.example", "http://h.example"),
    ])
    func originsAreSchemeHostAndPort(url: String, origin: String) {
        #expect(UploadEndpoint.origin(of: url) == origin)
    }

    @Test(arguments: ["file:///tmp/x", "127.0.0.1:8080/files", "not a url"])
    func nonHTTPURLsHaveNoOrigin(url: String) {
        #expect(UploadEndpoint.origin(of: url) == nil)
    }

    /// A legal URL with `%XX`, or non-ASCII letters, in its path trapped in
    /// Foundation when the digest lookup rebuilt the path. The path stays encoded as given.
    @Test(arguments: [
        ("http://127.0.0.1:8080/my%20uploads", "http://127.0.0.1:8080/my%20uploads/objects/by-digest/"),
        ("http://127.0.0.1:8080/my%20photos/uploads?token=x#f", "http://127.0.0.1:8080/my%20photos/objects/by-digest/"),
        ("http://127.0.0.1:8080/f%C3%B6tos/uploads", "http://127.0.0.1:8080/f%C3%B6tos/objects/by-digest/"),
        ("http://[::1]:8080/uploads", "http://[::1]:8080/objects/by-digest/"),
    ])
    func digestLookupsKeepAnEncodedPath(endpoint: String, prefix: String) {
        let hex = String(repeating: "ab", count: 32)
        #expect(UploadEndpoint.digestLookup(for: endpoint, sha256Hex: hex) == prefix + hex)
        #expect(UploadEndpoint.objectLookup(for: endpoint, id: "obj 1") != nil)
    }

    @Test(arguments: ["http://127.0.0.1:8080/my uploads", "http://127.0.0.1:8080/a\tb", " http://127.0.0.1:8080/uploads"])
    func urlsWithSpacesOrControlCharactersAreRefusedBeforeSending(url: String) {
        #expect(UploadEndpoint.origin(of: url) == nil)
        #expect(throws: TransferError.self) { try UploadConfiguration(endpoint: url).validate() }
    }
}
