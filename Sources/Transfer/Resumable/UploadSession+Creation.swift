import UploadProtocol

/// Creation: the upload resource made optimistically for a small file (the whole file in one
/// request, whose 104 names the resource to resume at if it is cut), carefully for a large one (an
/// empty request whose URL is saved before any byte goes), or one plain request to a server
/// without the protocol.
extension UploadSession {
    func create() async throws(TransferError) -> UploadReceipt {
        location = nil
        offset = 0
        shrunkAppendSize = nil
        switch try await uploader.discover() {
        case .plain:
            // Nothing such a server answers proves the photo arrived (any web server takes a
            // POST): only on explicit request, and then the upload is marked unverified.
            guard configuration.acceptUnverified else {
                throw TransferError(.unverifiedReceipt, """
                    \(UploadEndpoint.loggable(configuration.endpoint)) does not speak the resumable-upload protocol \
                    (its OPTIONS answer has no Upload-Limit), so nothing it answers proves a photo arrived; nothing was sent. \
                    Check the URL, or pass --accept-unverified to upload there anyway (marked uploaded-unverified)
                    """)
            }
            return try await plainUpload()
        case .resumable(let discovered):
            limits = discovered
            if let maxSize = limits.maxSize, size > maxSize {
                throw TransferError(.tooLarge, "the file is larger than the server's maximum upload size")
            }
            if size <= configuration.optimisticCreationLimit {
                if let done = try await optimisticCreation() { return done }
            } else {
                try await carefulCreation()
            }
            return try await appendUntilComplete()
        }
    }

    /// Sends the whole file with the completion header. Returns the receipt when it completes;
    /// nil when a 104 gave a Location and the transfer then failed, so appending continues there.
    private func optimisticCreation() async throws(TransferError) -> UploadReceipt? {
        var headers = try await completingHeaders() + creationHeaders(complete: true)
        headers.append((ResumableUpload.Header.contentType, "application/octet-stream"))
        // The 104's upload URL is saved the moment it arrives, while the body is still going out:
        // a process killed mid-body then resumes from the server's offset instead of starting over.
        let (interims, sink) = AsyncStream.makeStream(of: HTTPInterimResponse.self)
        var request = HTTPRequest(
            method: "POST", url: configuration.endpoint, headers: headers,
            body: .file(path: path, offset: 0, length: size), mayResendPartialBody: false, onBodySent: onBodySent,
            onInterimResponse: { sink.yield($0) })
        // The body waits for the 104 (sent before the 100): a 104 sent while the body streams
        // can be lost with the connection (a proxy that cuts drops what it has not forwarded,
        // and libcurl stops at a send error without reading what arrived), and then the upload
        // could only start over (measured through a cutting proxy: 5 of 6 cut creations
        // restarted from 0).
        request.waitsForContinue = size > 0
        let client = uploader.client
        async let finished = Self.exchange(request, on: client, then: sink)
        for await interim in interims where location == nil {
            // A 104 naming another origin ends the request here (leaving the scope cancels it):
            // nothing more goes out, and that URL is neither saved nor used.
            if let early = try resumptionLocation(in: [interim]) {
                location = early
                offset = 0
                try? save()  // best effort: a failure to save here is retried when adopting it below
            }
        }
        let exchange = await finished
        bytesSent += exchange.bytesSent
        let interimLocation = try resumptionLocation(in: exchange.interimResponses)
        switch exchange.result {
        case .success(let response) where (200...299).contains(response.status):
            if let error = ReceiverAnswer.webPageError(response, url: configuration.endpoint) { throw error }
            if let field = response.headers[ResumableUpload.Header.location],
               let resolved = UploadEndpoint.resolve(location: field, against: configuration.endpoint) {
                location = try UploadEndpoint.onDestinationOrigin(resolved, destination: configuration.endpoint,
                                                                  source: "the Location of its creation answer")
            }
            location = location ?? interimLocation
            if let taken = try partialAcknowledgement(in: response) {
                // The server took only part of the body (or says so): append the rest there.
                guard location != nil else {
                    throw TransferError(.unverifiedReceipt, "the server answered the upload as incomplete (\(taken) of \(size) bytes) without an upload URL to finish it",
                                        httpStatus: response.status)
                }
                offset = taken
                try save()
                report()
                return nil
            }
            offset = size
            report()
            return try await verifiedReceipt(for: response)
        case .success(let response) where response.status == 413 && size > 0:
            // The body is too large for one request: create empty and append in smaller pieces.
            try await carefulCreation()
            return nil
        case .success(let response):
            let error = TransferError.forStatus(response.status, creation: true, headers: response.headers, body: response.body)
            guard error.isTransient, let interimLocation else { throw error }
            try await adopt(location: interimLocation)
            try await recover(from: error)
            return try await retrieveOffsetAfterRecovery()
        case .failure(let error):
            guard error.isTransient, let interimLocation else { throw error }
            try await adopt(location: interimLocation)
            try await recover(from: error)
            return try await retrieveOffsetAfterRecovery()
        }
    }

    /// Runs `request` and ends `sink` (the stream of its interim responses) when it is over.
    private static func exchange(_ request: HTTPRequest, on client: HTTPClient,
                                 then sink: AsyncStream<HTTPInterimResponse>.Continuation) async -> HTTPExchange {
        let exchange = await client.exchange(request)
        sink.finish()
        return exchange
    }

    /// Creates the upload resource with an empty `?0` request and saves its URL before any byte.
    private func carefulCreation() async throws(TransferError) {
        let response = try await uploader.client.send(HTTPRequest(
            method: "POST", url: configuration.endpoint, headers: try partialHeaders() + creationHeaders(complete: false),
            body: .empty))
        if let error = ReceiverAnswer.webPageError(response, url: configuration.endpoint) { throw error }
        guard (200...299).contains(response.status) else {
            throw TransferError.forStatus(response.status, creation: true, headers: response.headers, body: response.body)
        }
        guard let field = response.headers[ResumableUpload.Header.location],
              let resolved = UploadEndpoint.resolve(location: field, against: configuration.endpoint) else {
            throw TransferError(.badServerResponse, "the creation response has no usable Location")
        }
        let sameOrigin = try UploadEndpoint.onDestinationOrigin(resolved, destination: configuration.endpoint,
                                                                source: "the Location of its creation answer")
        updateLimits(from: response.headers)
        try await adopt(location: sameOrigin)
    }

    /// Takes a new upload URL at offset 0 and saves it.
    private func adopt(location newLocation: String) async throws(TransferError) {
        location = newLocation
        offset = 0
        try save()
    }

    /// The whole file in one request, for servers without the resumable protocol.
    private func plainUpload() async throws(TransferError) -> UploadReceipt {
        var headers = try await completingHeaders()
        headers.append((ResumableUpload.Header.contentType, "application/octet-stream"))
        let response = try await uploader.client.send(HTTPRequest(
            method: configuration.plainUploadMethod, url: configuration.endpoint, headers: headers,
            body: .file(path: path, offset: 0, length: size), onBodySent: onBodySent))
        bytesSent += response.bytesSent
        if let error = ReceiverAnswer.webPageError(response, url: configuration.endpoint) { throw error }
        guard (200...299).contains(response.status) else {
            throw TransferError.forStatus(response.status, creation: true, headers: response.headers, body: response.body)
        }
        if ResumableUpload.isComplete(headers: response.headers) == false {
            throw TransferError(.unverifiedReceipt, "the server answered the upload as incomplete", httpStatus: response.status)
        }
        offset = size
        report()
        var done = try await verifiedReceipt(for: response)
        done.resumable = false
        return done
    }

    private func creationHeaders(complete: Bool) -> [(name: String, value: String)] {
        let completion = ResumableUpload.completionHeader(complete: complete, interopVersion: interopVersion)
        var headers: [(name: String, value: String)] = [(completion.name, completion.value)]
        if interopVersion >= 6 {
            headers.append((ResumableUpload.Header.uploadLength, String(size)))
        }
        return headers
    }

    /// The Location of the first 104 that echoes this client's interop version or names none
    /// (a receiver written from the platform's article sends a 104 with only `Location`); a 104
    /// naming another version is ignored. Throws `not-a-receiver` for a Location on another
    /// origin than the destination's.
    private func resumptionLocation(in interim: [HTTPInterimResponse]) throws(TransferError) -> String? {
        for response in interim where response.status == ResumableUpload.uploadResumptionSupported {
            if let version = response.headers[ResumableUpload.Header.interopVersion],
               StructuredField.integer(version) != Int64(interopVersion) { continue }
            guard let field = response.headers[ResumableUpload.Header.location],
                  let resolved = UploadEndpoint.resolve(location: field, against: configuration.endpoint) else { continue }
            let sameOrigin = try UploadEndpoint.onDestinationOrigin(resolved, destination: configuration.endpoint,
                                                                    source: "the Location of its 104 answer")
            updateLimits(from: response.headers)
            return sameOrigin
        }
        return nil
    }
}
