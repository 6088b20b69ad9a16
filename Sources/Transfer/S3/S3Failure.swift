/// Turns S3's error answers into `TransferError`s for the retry policy. S3 names its errors in an
/// XML body (`<Error><Code>SlowDown</Code>…`); only that code, reduced to letters and digits, is
/// kept in the message: S3's own message and the rest of the body are never copied.
enum S3Failure {
    /// The `<Code>` of an `<Error>` body, letters and digits only; nil when there is none.
    static func errorCode(in body: [UInt8]) -> String? {
        let text = Substring(String(decoding: body, as: UTF8.self))
        guard let error = S3XML.elements("Error", in: text).first, let code = S3XML.value("Code", in: error) else { return nil }
        let clean = String(code.unicodeScalars.filter { ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) }.prefix(64))
        return clean.isEmpty ? nil : clean
    }

    /// The error for S3's answer `status` with `body` and `headers` (names lowercased, kept as the
    /// error's `responseHeaders`) to the request `operation` (e.g. "UploadPart").
    static func error(status: Int, body: [UInt8], headers: [String: String] = [:], operation: String) -> TransferError {
        var error = statusError(status: status, body: body, operation: operation)
        error.responseHeaders = headers
        return error
    }

    private static func statusError(status: Int, body: [UInt8], operation: String) -> TransferError {
        let code = errorCode(in: body)
        let message = "\(operation): S3 answered \(status) \(code ?? "without an error code")"
        switch code {
        case "SlowDown", "ServiceUnavailable", "Throttling", "ThrottlingException":
            return TransferError(.rateLimited, message, httpStatus: status, classification: .transient)
        case "InternalError":
            return TransferError(.serverError, message, httpStatus: status, classification: .transient)
        case "RequestTimeout":
            return TransferError(.requestTimeout, message, httpStatus: status, classification: .transient)
        case "SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied", "ExpiredToken", "InvalidToken",
             "InvalidClientTokenId", "TokenRefreshRequired", "AuthorizationHeaderMalformed":
            return TransferError(.unauthorized, message, httpStatus: status, classification: .permanent)
        case "BadDigest", "XAmzContentSHA256Mismatch", "IncompleteBody":
            // The store computed another digest than the one sent: the bytes changed on the way.
            return TransferError(.corruptedInTransit, message + " (the bytes changed on the way: the store refused them)",
                                 httpStatus: status, classification: .transient)
        case "NoSuchBucket":
            return TransferError(.notFound, message, httpStatus: status, classification: .permanent)
        case "NoSuchUpload":
            // The multipart upload is gone; the uploader re-checks with ListParts and starts over.
            return TransferError(.notFound, message, httpStatus: status, classification: .transient)
        case "EntityTooLarge":
            return TransferError(.tooLarge, message, httpStatus: status, classification: .permanent)
        default:
            let base = TransferError.forStatus(status)
            return TransferError(base.code, message, httpStatus: status, classification: base.classification)
        }
    }
}
