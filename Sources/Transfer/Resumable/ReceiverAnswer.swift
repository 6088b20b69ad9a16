import UploadProtocol

/// Tells an upload receiver's answer from a web page's. A captive portal (hotel Wi-Fi) or a wrong
/// URL answers `200 OK` with an HTML page, or redirects to a login page: taken at its word, such
/// an answer would mark photos uploaded that are stored nowhere.
enum ReceiverAnswer {
    /// The headers only an upload receiver sends; an answer carrying one is not a web page's.
    private static let protocolHeaders = [
        ResumableUpload.Header.uploadLimit, ResumableUpload.Header.uploadOffset, ResumableUpload.Header.uploadComplete,
        ResumableUpload.Header.uploadIncomplete, ResumableUpload.Header.reprDigest, ResumableUpload.Header.serverResourceID,
    ]

    /// The error for an answer that looks like a web page (an HTML body without any upload
    /// protocol header) or a redirect; nil for any other answer.
    static func webPageError(_ response: HTTPResponse, url: String) -> TransferError? {
        if (300...399).contains(response.status) {
            let target = response.headers["location"].map { " to \(UploadEndpoint.loggable($0))" } ?? ""
            return TransferError(.notAReceiver,
                                 "\(UploadEndpoint.loggable(url)) answered with a redirect\(target), not as an upload receiver: a captive portal or a wrong URL?",
                                 httpStatus: response.status)
        }
        guard (200...299).contains(response.status), looksLikeWebPage(response) else { return nil }
        return TransferError(.notAReceiver,
                             "\(UploadEndpoint.loggable(url)) answered like a web page, not an upload receiver: a captive portal or a wrong URL?",
                             httpStatus: response.status)
    }

    /// True for an HTML answer (by its `Content-Type`, or a body that opens like HTML) that carries
    /// no upload protocol header.
    static func looksLikeWebPage(_ response: HTTPResponse) -> Bool {
        if protocolHeaders.contains(where: { response.headers[$0] != nil }) { return false }
        let type = response.headers["content-type"]?.lowercased() ?? ""
        if type.hasPrefix("text/html") || type.hasPrefix("application/xhtml") { return true }
        let opening = String(decoding: response.body.prefix(256), as: UTF8.self)
            .drop { $0.isWhitespace || $0 == "\u{FEFF}" }.prefix(64).lowercased()
        return opening.hasPrefix("<!doctype html") || opening.hasPrefix("<html") || opening.hasPrefix("<head")
    }
}
