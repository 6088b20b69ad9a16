import UploadProtocol

/// The server's durable acknowledgement of a finished upload.
public struct UploadReceipt: Sendable, Equatable {
    /// The stored object's id (`x-server-resource-id`), when the server sent one.
    public var serverID: String?
    /// The final response's status.
    public var status: Int
    /// The final response's headers, names lowercased.
    public var headers: [String: String]
    /// Request body bytes sent on the wire by this call, across every request and resume.
    public var bytesSent: Int64
    /// The upload resource's URL, or nil for a plain upload.
    public var location: String?
    /// True when the file went through the resumable protocol, false for a plain upload.
    public var resumable: Bool
    /// True when the hash pre-check found the content on the server and no bytes were sent.
    public var alreadyStored: Bool
    /// Whether the destination proved it holds these bytes.
    public var proof: ReceiptProof
    /// The offset the server confirmed for the saved upload this call resumed (`resumeFrom`), so
    /// the bytes before it were not sent again; nil when no saved upload was resumed (none given,
    /// or the server no longer had it and the upload started over).
    public var resumedFromOffset: Int64?

    /// Creates a receipt.
    public init(serverID: String?, status: Int, headers: [String: String], bytesSent: Int64,
                location: String?, resumable: Bool, alreadyStored: Bool = false, proof: ReceiptProof = .verified,
                resumedFromOffset: Int64? = nil) {
        self.serverID = serverID
        self.status = status
        self.headers = headers
        self.bytesSent = bytesSent
        self.location = location
        self.resumable = resumable
        self.alreadyStored = alreadyStored
        self.proof = proof
        self.resumedFromOffset = resumedFromOffset
    }
}
