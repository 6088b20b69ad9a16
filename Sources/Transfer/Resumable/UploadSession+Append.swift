import UploadProtocol

/// Appending: the file in appends from the acknowledged offset, as large as the server allows or
/// a 413 taught, the last one held back while the digest is still being computed; a 409, a 413
/// and a forgotten resource each have their own answer.
extension UploadSession {
    func appendUntilComplete() async throws(TransferError) -> UploadReceipt {
        var conflicts = 0
        // Appends the server answered 2xx to without taking a byte: a server that acknowledges
        // everything and stores nothing would otherwise be fed the same bytes for ever.
        var emptyAcknowledgements = 0
        while true {
            try checkCancellation()
            guard let target = location else {
                throw TransferError(.badServerResponse, "the upload has no resource URL")
            }
            let remaining = size - offset
            var length = remaining
            if let cap = appendCap() { length = min(length, cap) }
            var headers = try partialHeaders()
            if length == remaining && digestHeaders == nil {
                // Send what can go without the digest; the completing append waits for it.
                let tail = max(Self.deferredDigestTail, limits.minAppendSize ?? 0)
                if length > tail && length - tail >= (limits.minAppendSize ?? 0) {
                    length -= tail
                } else {
                    headers = try await completingHeaders()
                }
            }
            let complete = length == remaining
            headers.append((ResumableUpload.Header.uploadOffset, String(offset)))
            let completion = ResumableUpload.completionHeader(complete: complete, interopVersion: interopVersion)
            headers.append((completion.name, completion.value))
            if interopVersion >= 6 {
                headers.append((ResumableUpload.Header.contentType, ResumableUpload.partialUploadMediaType))
            }
            // While the digest is unknown, the bytes going out are hashed on the way.
            let observer: (@Sendable (UnsafeRawBufferPointer, Int64) -> Void)?
            if digestHeaders == nil, let sendingDigest {
                observer = { bytes, at in sendingDigest.observe(bytes, at: at) }
            } else {
                observer = nil
            }
            let exchange = await uploader.client.exchange(HTTPRequest(
                method: "PATCH", url: target, headers: headers, body: .file(path: path, offset: offset, length: length),
                mayResendPartialBody: false, onBodySent: onBodySent, bodyObserver: observer))
            bytesSent += exchange.bytesSent
            let response: HTTPResponse
            switch exchange.result {
            case .failure(let error):
                try await recover(from: error)
                if let done = try await retrieveOffsetAfterRecovery() { return done }
                continue
            case .success(let received):
                response = received
            }
            updateLimits(from: response.headers)
            if let error = ReceiverAnswer.webPageError(response, url: target) { throw error }
            switch response.status {
            case 200...299:
                // A completing append is done unless the server says it is not (`Upload-Complete: ?0`,
                // or an `Upload-Offset` short of the length); the receipt still has to prove it.
                if complete, try partialAcknowledgement(in: response) == nil {
                    offset = size
                    report()
                    return try await verifiedReceipt(for: response)
                }
                var acknowledged = offset + length
                if let field = response.headers[ResumableUpload.Header.uploadOffset] {
                    guard let value = StructuredField.integer(field), value >= offset, value <= offset + length else {
                        throw TransferError(.badServerResponse, "the append response has an impossible Upload-Offset")
                    }
                    acknowledged = value
                }
                if acknowledged == offset && length > 0 {
                    emptyAcknowledgements += 1
                    guard emptyAcknowledgements <= 3 else {
                        throw TransferError(.unverifiedReceipt, "the server acknowledges appends without taking their bytes",
                                            httpStatus: response.status)
                    }
                } else {
                    emptyAcknowledgements = 0
                }
                offset = acknowledged
                conflicts = 0
                try save()
                report()
            case 409:
                conflicts += 1
                guard conflicts <= 3 else {
                    throw TransferError(.badServerResponse, "the server keeps rejecting the offset it reports", httpStatus: 409)
                }
                if let done = try await retrieveOffsetAfterRecovery() { return done }
            case 413:
                try shrinkAppends(after: length)
            case 404, 410:
                try await startOver()
                return try await create()
            default:
                let error = TransferError.forStatus(response.status, headers: response.headers, body: response.body)
                try await recover(from: error)
                if let done = try await retrieveOffsetAfterRecovery() { return done }
            }
        }
    }

    /// The largest append allowed now: the server's max-append-size, or what a 413 taught.
    private func appendCap() -> Int64? {
        switch (limits.maxAppendSize, shrunkAppendSize) {
        case let (a?, b?): return max(1, min(a, b))
        case let (a?, nil): return max(1, a)
        case let (nil, b?): return b
        case (nil, nil): return nil
        }
    }

    /// Halves the append after a 413, never below min-append-size; permanent when it cannot shrink.
    private func shrinkAppends(after length: Int64) throws(TransferError) {
        let floor = max(1, limits.minAppendSize ?? 1)
        let smaller = max(floor, length / 2)
        guard smaller < length else {
            throw TransferError(.tooLarge, "the server refused even the smallest allowed append", httpStatus: 413)
        }
        shrunkAppendSize = smaller
    }
}
