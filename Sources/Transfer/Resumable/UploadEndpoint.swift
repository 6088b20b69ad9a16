import Foundation

/// URL arithmetic the uploader needs: an endpoint's origin (the discovery cache key), a
/// `Location` resolved against the request it answered, and whether it stays on the
/// destination's origin.
enum UploadEndpoint {
    /// `scheme://host[:port]`, lowercased; nil unless the URL is absolute http or https.
    static func origin(of url: String) -> String? {
        // RFC 3986 has no room for spaces or control characters: libcurl refuses such a URL at
        // every request, so it is refused here, before anything is sent.
        guard !url.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }),
              let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = parsed.host, !host.isEmpty,
              parsed.port.map({ (1...65535).contains($0) }) ?? true else { return nil }
        let port = parsed.port.map { ":\($0)" } ?? ""
        return "\(scheme)://\(host.lowercased())\(port)"
    }

    /// True when `url` is on the same origin as `destination`: the same scheme, host and port
    /// (an omitted port is the scheme's default, so `http://h` and `http://h:80` are one origin).
    /// False when either is not an absolute http(s) URL.
    static func isSameOrigin(_ url: String, as destination: String) -> Bool {
        guard let a = explicitOrigin(of: url), let b = explicitOrigin(of: destination) else { return false }
        return a == b
    }

    /// `origin(of:)` with the port always written out.
    private static func explicitOrigin(of url: String) -> String? {
        guard let origin = origin(of: url), let parsed = URL(string: url) else { return nil }
        if parsed.port != nil { return origin }
        return origin + (parsed.scheme?.lowercased() == "https" ? ":443" : ":80")
    }

    /// `url` when it is on `destination`'s origin. Otherwise throws `not-a-receiver` naming both
    /// origins: the upload URL a server names (in a creation answer, a 104, a saved checkpoint)
    /// gets the photo's bytes and the bearer token, and both belong to the destination alone (a
    /// receiver answering `Location: http://other-host/...` would otherwise have them sent there,
    /// and the photo marked uploaded at the destination). `source` says where the URL came from.
    static func onDestinationOrigin(_ url: String, destination: String, source: String) throws(TransferError) -> String {
        guard !isSameOrigin(url, as: destination) else { return url }
        let destinationOrigin = origin(of: destination) ?? loggable(destination)
        let otherOrigin = origin(of: url) ?? loggable(url)
        throw TransferError(.notAReceiver, """
            the receiver at \(destinationOrigin) named an upload URL on another origin, \(otherOrigin) (\(source)): \
            the photo and the token go only to \(destinationOrigin), so nothing was sent to \(otherOrigin). \
            Check the receiver's public URL
            """)
    }

    /// A `Location` value made absolute against the URL of the request it answered; nil when it
    /// does not resolve to an http(s) URL.
    static func resolve(location: String, against base: String) -> String? {
        let trimmed = location.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, let baseURL = URL(string: base),
              let resolved = URL(string: trimmed, relativeTo: baseURL)?.absoluteURL else { return nil }
        let text = resolved.absoluteString
        return origin(of: text) == nil ? nil : text
    }

    /// The receiver's digest lookup for `endpoint`: its path without a trailing `uploads`
    /// segment, then `objects/by-digest/<sha256Hex>` (query and fragment dropped); nil unless the
    /// endpoint is an absolute http(s) URL.
    static func digestLookup(for endpoint: String, sha256Hex: String) -> String? {
        receiverURL(for: endpoint, objectPath: ["by-digest", sha256Hex.lowercased()])
    }

    /// The receiver's object listing entry for `endpoint`: its path without a trailing `uploads`
    /// segment, then `objects/<id>` (the id percent-encoded); nil unless absolute http(s).
    static func objectLookup(for endpoint: String, id: String) -> String? {
        guard let encoded = id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) else {
            return nil
        }
        return receiverURL(for: endpoint, objectPath: [encoded])
    }

    /// `endpoint`'s path without a trailing `uploads` segment, then `objects/` and `objectPath`
    /// (segments already percent-encoded), without query or fragment; nil unless absolute http(s).
    private static func receiverURL(for endpoint: String, objectPath: [String]) -> String? {
        guard origin(of: endpoint) != nil, var components = URLComponents(string: endpoint) else { return nil }
        // The path stays percent-encoded: decoded, a `%20` or a non-ASCII letter would make an
        // invalid encoded path, which Foundation traps on.
        var segments = components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        if segments.last == "uploads" { segments.removeLast() }
        segments += ["objects"] + objectPath
        components.percentEncodedPath = "/" + segments.joined(separator: "/")
        components.percentEncodedQuery = nil
        components.percentEncodedFragment = nil
        return components.string
    }

    /// The URL as it may be shown: without user info, query or fragment (which may hold secrets).
    static func loggable(_ url: String) -> String {
        guard var components = URLComponents(string: url) else {
            return String(url.prefix { $0 != "?" && $0 != "#" })
        }
        components.user = nil
        components.password = nil
        components.percentEncodedQuery = nil
        components.percentEncodedFragment = nil
        return components.string ?? String(url.prefix { $0 != "?" && $0 != "#" })
    }
}
