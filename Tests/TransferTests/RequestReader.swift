import Foundation

/// A request line and headers (names lowercased).
struct RequestHead {
    var method: String
    var path: String
    var headers: [String: String]
}

/// Reads request heads and bodies from a socket, keeping bytes that arrived early.
struct RequestReader {
    let socket: TestSocket
    private var pending: [UInt8] = []

    init(socket: TestSocket) { self.socket = socket }

    /// The next request head; nil at end of stream or on garbage.
    mutating func readHead() -> RequestHead? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = Self.find(terminator, in: pending) {
                let text = String(decoding: pending[0..<end], as: UTF8.self)
                pending.removeFirst(end + 4)
                var lines = text.components(separatedBy: "\r\n")
                guard !lines.isEmpty else { return nil }
                let requestLine = lines.removeFirst().split(separator: " ")
                guard requestLine.count == 3 else { return nil }
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                return RequestHead(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers)
            }
            let chunk = socket.read(maxCount: 16 * 1024)
            if chunk.isEmpty { return nil }
            pending += chunk
        }
    }

    /// Up to `maxCount` body bytes; empty at end of stream.
    mutating func readBody(maxCount: Int) -> [UInt8] {
        if !pending.isEmpty {
            let count = min(maxCount, pending.count)
            let out = Array(pending[0..<count])
            pending.removeFirst(count)
            return out
        }
        return socket.read(maxCount: maxCount)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i..<(i + needle.count)].elementsEqual(needle) {
            return i
        }
        return nil
    }
}
