#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Where the tool writes: results to stdout, diagnostics and progress to stderr. Progress bars are
/// drawn only when stderr is a terminal; `--json` turns results into JSON lines.
final class Console: @unchecked Sendable {
    /// Shared by every command of one run. Guarded by `lock`.
    static let shared = Console()

    private let lock = NSLock()
    /// stdout is a terminal.
    let stdoutIsTerminal = isatty(STDOUT_FILENO) == 1
    /// stderr is a terminal: progress bars go there.
    let stderrIsTerminal = isatty(STDERR_FILENO) == 1
    /// Colour is allowed: a terminal, and NO_COLOR unset or empty.
    let colorEnabled: Bool
    private var progressVisible = false

    private init() {
        let noColor = ProcessInfo.processInfo.environment["NO_COLOR"].map { !$0.isEmpty } ?? false
        colorEnabled = isatty(STDOUT_FILENO) == 1 && !noColor
    }

    /// Writes a line of results to stdout.
    func out(_ line: String) {
        lock.lock(); defer { lock.unlock() }
        clearProgressLocked()
        write(STDOUT_FILENO, line + "\n")
    }

    /// Writes an encodable value as one compact JSON line to stdout. No control character is
    /// written raw: JSONEncoder escapes C0 controls, and DEL and C1 controls (which a server's id
    /// may hold, and some terminals obey) are written as `\u007f`, `\u009b`..., the same JSON value.
    func json(_ value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        out(Self.escapingControlsInJSON(text))
    }

    /// `json` (the encoder's output) with DEL and C1 controls written as `\uXXXX` escapes. They
    /// can stand only inside JSON strings, where the escape means the same character.
    static func escapingControlsInJSON(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: { (0x7F...0x9F).contains($0.value) }) else { return json }
        var out = ""
        out.reserveCapacity(json.utf8.count + 12)
        for scalar in json.unicodeScalars {
            if (0x7F...0x9F).contains(scalar.value) {
                out += "\\u00" + String(scalar.value, radix: 16)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Writes a diagnostic line to stderr.
    func err(_ line: String) {
        lock.lock(); defer { lock.unlock() }
        clearProgressLocked()
        write(STDERR_FILENO, line + "\n")
    }

    /// Redraws the progress line on a terminal; does nothing when stderr is piped.
    func progress(_ line: String) {
        guard stderrIsTerminal else { return }
        lock.lock(); defer { lock.unlock() }
        write(STDERR_FILENO, "\r\u{1B}[2K" + line)
        progressVisible = true
    }

    /// Removes the progress line.
    func endProgress() {
        lock.lock(); defer { lock.unlock() }
        clearProgressLocked()
    }

    /// Bold text when colour is on.
    func bold(_ text: String) -> String { colorEnabled ? "\u{1B}[1m\(text)\u{1B}[0m" : text }
    /// Red text when colour is on.
    func red(_ text: String) -> String { colorEnabled ? "\u{1B}[31m\(text)\u{1B}[0m" : text }

    private func clearProgressLocked() {
        if progressVisible {
            write(STDERR_FILENO, "\r\u{1B}[2K")
            progressVisible = false
        }
    }

    private func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            bytes = bytes.dropFirst(n)
        }
    }
}
