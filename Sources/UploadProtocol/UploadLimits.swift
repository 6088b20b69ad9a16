/// The `Upload-Limit` dictionary: what a server accepts. A value of nil means no such limit.
public struct UploadLimits: Sendable, Equatable {
    public var maxSize: Int64?
    public var minSize: Int64?
    public var maxAppendSize: Int64?
    public var minAppendSize: Int64?
    /// Seconds an incomplete upload is kept (`max-age`; `expires` up to interop 6).
    public var maxAge: Int64?

    public init(maxSize: Int64? = nil, minSize: Int64? = nil, maxAppendSize: Int64? = nil,
                minAppendSize: Int64? = nil, maxAge: Int64? = nil) {
        self.maxSize = maxSize
        self.minSize = minSize
        self.maxAppendSize = maxAppendSize
        self.minAppendSize = minAppendSize
        self.maxAge = maxAge
    }

    /// Parses a field value. Unknown keys are ignored; a known key whose value is not a
    /// non-negative integer voids the whole field (nil), as does a malformed dictionary. An empty
    /// field is also nil: servers without limits send `min-size=0`.
    ///
    /// A bare non-negative integer (`Upload-Limit: 107374182400`) is taken as `max-size`: it is not
    /// a dictionary, but it is the form the platform's article shows, and receivers written from
    /// the article send it (issue 31, item 10). Refused, such a receiver would be taken for a
    /// server without the protocol.
    public init?(fieldValue: String) {
        if let bare = StructuredField.integer(fieldValue) {
            guard bare >= 0 else { return nil }
            self.init(maxSize: bare)
            return
        }
        guard let members = StructuredField.dictionary(fieldValue), !members.isEmpty else { return nil }
        var limits = UploadLimits()
        for (key, value) in members {
            let target: WritableKeyPath<UploadLimits, Int64?>
            switch key {
            case "max-size": target = \.maxSize
            case "min-size": target = \.minSize
            case "max-append-size": target = \.maxAppendSize
            case "min-append-size": target = \.minAppendSize
            case "max-age", "expires": target = \.maxAge
            default: continue
            }
            guard case .integer(let n) = value, n >= 0 else { return nil }
            limits[keyPath: target] = n
        }
        self = limits
    }

    /// The field value for the given interop version (`expires` up to 6, `max-age` after);
    /// `min-size=0` when there are no limits.
    public func fieldValue(interopVersion: Int = ResumableUpload.defaultInteropVersion) -> String {
        var members: [(key: String, value: StructuredItem)] = []
        if let maxSize { members.append(("max-size", .integer(maxSize))) }
        if let minSize { members.append(("min-size", .integer(minSize))) }
        if let maxAppendSize { members.append(("max-append-size", .integer(maxAppendSize))) }
        if let minAppendSize { members.append(("min-append-size", .integer(minAppendSize))) }
        if let maxAge { members.append((interopVersion <= 6 ? "expires" : "max-age", .integer(maxAge))) }
        if members.isEmpty { members.append(("min-size", .integer(0))) }
        return StructuredField.serialize(members)
    }
}
