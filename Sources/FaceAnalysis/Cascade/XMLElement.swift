/// One element of a parsed XML document: its name, attributes, the text directly inside it
/// (concatenated, comments removed) and its child elements in document order.
struct XMLElement: Sendable {
    /// The tag name.
    var name: String
    /// Attributes in document order.
    var attributes: [(name: String, value: String)]
    /// Character data directly inside this element, with entities decoded.
    var text: String
    /// Child elements in document order.
    var children: [XMLElement]

    /// The first child named `name`.
    func child(_ name: String) -> XMLElement? {
        children.first { $0.name == name }
    }

    /// The value of the attribute `name`.
    func attribute(_ name: String) -> String? {
        attributes.first { $0.name == name }?.value
    }

    /// The whitespace-separated words of the text.
    var words: [Substring] {
        text.split(whereSeparator: { $0.isWhitespace })
    }

    /// The text, trimmed of surrounding whitespace.
    var trimmedText: String {
        words.joined(separator: " ")
    }
}
