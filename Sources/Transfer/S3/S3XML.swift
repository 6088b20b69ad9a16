/// Just enough XML reading for S3's answers (`InitiateMultipartUploadResult`, `ListPartsResult`,
/// `CompleteMultipartUploadResult`, `ListMultipartUploadsResult`, `Error`): the text of
/// non-nested elements by name, with the five predefined entities and numeric references
/// decoded. S3 bodies are flat records without CDATA or attributes on the elements read here.
public enum S3XML {
    /// The inner text of every `<name>…</name>` (or empty `<name/>`) in document order.
    public static func elements(_ name: String, in text: Substring) -> [Substring] {
        var found: [Substring] = []
        var rest = text[...]
        let open = "<" + name
        let close = "</" + name + ">"
        while let start = rest.range(of: open) {
            let after = rest[start.upperBound...]
            guard let next = after.first else { break }
            if next == "/" && after.dropFirst().first == ">" {
                found.append(after[after.startIndex..<after.startIndex])
                rest = after.dropFirst(2)
                continue
            }
            guard next == ">" || next == " " || next == "\t" || next == "\n" || next == "\r",
                  let tagEnd = after.firstIndex(of: ">") else {
                rest = after
                continue
            }
            let body = after[after.index(after: tagEnd)...]
            guard let end = body.range(of: close) else { break }
            found.append(body[body.startIndex..<end.lowerBound])
            rest = body[end.upperBound...]
        }
        return found
    }

    /// The decoded text of the first `<name>` element, or nil.
    public static func value(_ name: String, in text: Substring) -> String? {
        elements(name, in: text).first.map { decodeEntities($0) }
    }

    /// The decoded text of the first `<name>` element of a body, or nil.
    public static func value(_ name: String, in body: [UInt8]) -> String? {
        value(name, in: Substring(String(decoding: body, as: UTF8.self)))
    }

    /// Text with `&amp; &lt; &gt; &quot; &apos;` and `&#N;`/`&#xN;` decoded.
    public static func decodeEntities(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var out = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            let tail = rest[amp...]
            guard let semi = tail.firstIndex(of: ";"), tail.distance(from: amp, to: semi) <= 10 else {
                out += "&"
                rest = tail.dropFirst()
                continue
            }
            let entity = tail[tail.index(after: amp)..<semi]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                var scalar: Unicode.Scalar?
                if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                    scalar = UInt32(entity.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                } else if entity.hasPrefix("#") {
                    scalar = UInt32(entity.dropFirst()).flatMap(Unicode.Scalar.init)
                }
                if let scalar { out.unicodeScalars.append(scalar) } else { out += "&" + entity + ";" }
            }
            rest = tail[tail.index(after: semi)...]
        }
        return out + rest
    }
}
