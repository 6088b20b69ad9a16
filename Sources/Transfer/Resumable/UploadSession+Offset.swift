import UploadProtocol

/// Offset retrieval and recovery: after a failure the server is asked where the upload stands
/// (HEAD on the resource), a transient failure spends one resume from the budget, and a resource
/// the server forgot is given up once.
extension UploadSession {
    /// HEAD on the upload URL. Sets `offset`; clears `location` when the server no longer knows
    /// the resource (404/410); returns a receipt when the server says the upload is complete.
    func retrieveOffset() async throws(TransferError) -> UploadReceipt? {
        guard let target = location else { return nil }
        while true {
            try checkCancellation()
            let exchange = await uploader.client.exchange(HTTPRequest(
                method: "HEAD", url: target, headers: uploader.baseHeaders(interopVersion: interopVersion)))
            let response: HTTPResponse
            switch exchange.result {
            case .failure(let error):
                try await recover(from: error)
                continue
            case .success(let received):
                response = received
            }
            if let error = ReceiverAnswer.webPageError(response, url: target) { throw error }
            switch response.status {
            case 200...299:
                guard let field = response.headers[ResumableUpload.Header.uploadOffset],
                      let value = StructuredField.integer(field), value >= 0, value <= size else {
                    throw TransferError(.badServerResponse, "the offset response has a missing or impossible Upload-Offset")
                }
                updateLimits(from: response.headers)
                offset = value
                try save()
                report()
                if ResumableUpload.isComplete(headers: response.headers) == true {
                    guard value == size else {
                        throw TransferError(.badServerResponse, "the server reports a completed upload of a different size")
                    }
                    return try await verifiedReceipt(for: response)
                }
                return nil
            case 404, 410:
                location = nil
                return nil
            default:
                try await recover(from: TransferError.forStatus(response.status, headers: response.headers, body: response.body))
            }
        }
    }

    /// After a recovery, asks for the offset; a vanished resource means a fresh creation.
    func retrieveOffsetAfterRecovery() async throws(TransferError) -> UploadReceipt? {
        if let done = try await retrieveOffset() { return done }
        if location == nil {
            try await startOver()
            return try await create()
        }
        return nil
    }

    /// Spends one resume from the budget (after a pause) if the error is transient and there is an
    /// upload URL to resume; otherwise rethrows it.
    func recover(from error: TransferError) async throws(TransferError) {
        // A cut after the server acknowledged more than at the last one is progress: the budget
        // starts again, so a link that keeps cutting but keeps moving the upload on never fails
        // it. Only cuts that gain nothing use the budget up.
        if offset > offsetAtLastRecovery {
            offsetAtLastRecovery = offset
            resumesLeft = max(0, configuration.maxResumesPerUpload)
            resumeAttempt = 0
        }
        guard error.isTransient, location != nil, resumesLeft > 0 else { throw error }
        resumesLeft -= 1
        resumeAttempt += 1
        if configuration.resumeBackoff > .zero {
            do {
                try await Task.sleep(for: configuration.resumeBackoff * resumeAttempt)
            } catch {
                throw TransferError(.cancelled, "the transfer was cancelled")
            }
        }
    }

    /// Gives up on a resource the server forgot; only once per call.
    func startOver() async throws(TransferError) {
        guard restartsLeft > 0 else {
            throw TransferError(.badServerResponse, "the server lost the upload resource twice", httpStatus: 404)
        }
        restartsLeft -= 1
        location = nil
        resumedFrom = nil
    }
}
