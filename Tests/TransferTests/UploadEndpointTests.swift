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
}
