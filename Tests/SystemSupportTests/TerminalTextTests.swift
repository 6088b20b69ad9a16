import Testing
import SystemSupport

/// What a server sends is printed with its control characters escaped (issue 31, item 8).
@Suite struct TerminalTextTests {
    @Test(arguments: [
        // A title change and a screen clear, as a hostile x-server-resource-id carries them.
        ("\u{1B}]0;owned\u{07}\u{1B}[2J", "\\x1b]0;owned\\x07\\x1b[2J"),
        ("line\nforged: uploaded\r\t", "line\\x0aforged: uploaded\\x0d\\x09"),
        ("nul\u{0}del\u{7F}", "nul\\x00del\\x7f"),
        // C1 controls: U+009B is an 8-bit CSI to some terminals.
        ("\u{9B}2J\u{85}", "\\u{9b}2J\\u{85}"),
        // Ordinary text and Unicode are kept as they are.
        ("obj-42", "obj-42"),
        ("Grand-mère été 写真 \u{A0}\u{1F4F7}", "Grand-mère été 写真 \u{A0}\u{1F4F7}"),
        ("", ""),
    ])
    func controlCharactersAreShownEscaped(text: String, shown: String) {
        let escaped = TerminalText.escaped(text)
        #expect(escaped == shown)
        #expect(!escaped.unicodeScalars.contains(where: TerminalText.isControl))
    }
}
