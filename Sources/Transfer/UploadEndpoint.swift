import Foundation

/// URL arithmetic the uploader needs: an endpoint's origin (the discovery cache key) and a
/// `Location` resolved against the request it answered.
enum UploadEndpoint {
    /// `scheme://host[:port]`, lowercased; nil unless the URL is absolute http or https.
    static func origin(of url: String) -> String? {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = parsed.host, !host.isEmpty,
              parsed.port.map({ (1...65535).contains($0) }) ?? true else { return nil }
        let port = parsed.port.map { ":\($0)" } ?? ""
        return "\(scheme)://\(host.lowercased())\(port)"
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
}
