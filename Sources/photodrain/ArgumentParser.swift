/// A small command-line parser: the subset of swift-argument-parser's behaviour PhotoDrain needs,
/// written here because the project may not depend on outside packages.
///
/// Options are `--name value`, `--name=value` or boolean `--flag`; `--` ends options. Unknown
/// options, missing values and bad numbers are `UsageError`s, which the tool reports in one line and
/// exits 64 on.

/// A mistake in how the tool was called.
struct UsageError: Error, CustomStringConvertible {
    let message: String
    /// The command whose usage line should be shown, when known.
    var command: String?
    init(_ message: String, command: String? = nil) {
        self.message = message
        self.command = command
    }
    var description: String { message }
}

/// One option a command accepts.
struct OptionSpec: Sendable {
    /// The long name without dashes.
    let name: String
    /// The value's placeholder (`N`, `PATH`), or nil for a boolean flag.
    let value: String?
    /// One line of help.
    let help: String
    /// The default, shown in help.
    let defaultValue: String?

    static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, value: nil, help: help, defaultValue: nil)
    }

    static func option(_ name: String, _ value: String, _ help: String, default defaultValue: String? = nil) -> OptionSpec {
        OptionSpec(name: name, value: value, help: help, defaultValue: defaultValue)
    }
}

/// What a command is and what it takes.
struct CommandSpec: Sendable {
    let name: String
    /// One line: what it does.
    let abstract: String
    /// The arguments part of the usage line, e.g. `FILE...`.
    let arguments: String
    /// A paragraph or two of explanation.
    let discussion: String
    let options: [OptionSpec]
    /// Fewest and most positional arguments (nil: no upper bound).
    let positionals: (min: Int, max: Int?)
    /// Example invocations with a comment each.
    let examples: [(command: String, comment: String)]
    /// What each exit status means for this command.
    let exitCodes: [(code: Int32, meaning: String)]

    /// The command's own options and the two every command takes (`--config`, `--help`): what
    /// help, the manual pages and the shell completions list.
    var allOptions: [OptionSpec] {
        options + [.option("config", "PATH", "Read defaults for these options from a JSON file.",
                           default: "$XDG_CONFIG_HOME/photodrain/config.json if present"),
                   .flag("help", "Show this help.")]
    }

    /// The full help text.
    func help() -> String {
        var lines = ["OVERVIEW: \(abstract)", "", "USAGE: photodrain \(name) \(arguments) [options]".replacingDoubleSpaces()]
        if !discussion.isEmpty { lines += ["", discussion] }
        lines += ["", "OPTIONS:"]
        let all = allOptions
        let labels = all.map { spec in "--\(spec.name)" + (spec.value.map { " \($0)" } ?? "") }
        let width = min(max(labels.map(\.count).max() ?? 0, 10), 28)
        for (spec, label) in zip(all, labels) {
            var text = spec.help
            if let d = spec.defaultValue { text += " (default: \(d))" }
            let pad = label.count < width ? String(repeating: " ", count: width - label.count) : "\n" + String(repeating: " ", count: width + 2)
            lines.append("  \(label)\(pad)  \(text)")
        }
        if !examples.isEmpty {
            lines += ["", "EXAMPLES:"]
            for example in examples { lines += ["  # \(example.comment)", "  \(example.command)"] }
        }
        if !exitCodes.isEmpty {
            lines += ["", "EXIT STATUS:"]
            for (code, meaning) in exitCodes { lines.append("  \(code)  \(meaning)") }
        }
        return lines.joined(separator: "\n")
    }

    /// Parses `arguments` (without the command name) against this spec.
    func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments(command: name)
        var rest = arguments[...]
        var optionsEnded = false
        while let argument = rest.popFirst() {
            if optionsEnded || !argument.hasPrefix("--") || argument == "-" {
                if !optionsEnded, argument.hasPrefix("-"), argument.count > 1, argument != "-" {
                    if argument == "-h" { parsed.helpRequested = true; continue }
                    throw UsageError("unknown option '\(argument)'", command: name)
                }
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" { optionsEnded = true; continue }
            var key = String(argument.dropFirst(2))
            var inlineValue: String?
            if let eq = key.firstIndex(of: "=") {
                inlineValue = String(key[key.index(after: eq)...])
                key = String(key[..<eq])
            }
            if key == "help" { parsed.helpRequested = true; continue }
            if key == "config" {
                guard let value = inlineValue ?? rest.popFirst() else { throw UsageError("--config needs a value (PATH)", command: name) }
                parsed.values["config"] = value
                continue
            }
            guard let spec = options.first(where: { $0.name == key }) else {
                throw UsageError("unknown option '--\(key)'", command: name)
            }
            if spec.value == nil {
                if inlineValue != nil { throw UsageError("--\(key) takes no value", command: name) }
                parsed.flags.insert(key)
            } else {
                guard let value = inlineValue ?? rest.popFirst() else {
                    throw UsageError("--\(key) needs a value (\(spec.value ?? "VALUE"))", command: name)
                }
                parsed.values[key] = value
                parsed.lists[key, default: []].append(value)
            }
        }
        if parsed.helpRequested { return parsed }
        if parsed.positionals.count < positionals.min {
            throw UsageError("missing \(self.arguments)", command: name)
        }
        if let max = positionals.max, parsed.positionals.count > max {
            throw UsageError("unexpected argument '\(parsed.positionals[max])'", command: name)
        }
        return parsed
    }
}

/// The result of parsing: typed accessors throw `UsageError` for values that do not parse.
struct ParsedArguments {
    let command: String
    var values: [String: String] = [:]
    /// Every value of each option given, in order, for options that may repeat (`--include`).
    var lists: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []
    var helpRequested = false

    func flag(_ name: String) -> Bool { flags.contains(name) }

    func string(_ name: String) -> String? { values[name] }

    /// Every value a repeatable option was given, in order (a later one does not replace an earlier).
    func strings(_ name: String) -> [String] { lists[name] ?? values[name].map { [$0] } ?? [] }

    func int(_ name: String, default defaultValue: Int, range: ClosedRange<Int> = 0...Int.max) throws(UsageError) -> Int {
        guard let text = values[name] else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError("--\(name) wants a whole number in \(range.lowerBound)...\(range.upperBound), not '\(text)'", command: command)
        }
        return value
    }

    func double(_ name: String, default defaultValue: Double, range: ClosedRange<Double>) throws(UsageError) -> Double {
        guard let text = values[name] else { return defaultValue }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw UsageError("--\(name) wants a number in \(range.lowerBound)...\(range.upperBound), not '\(text)'", command: command)
        }
        return value
    }

    /// A byte count such as `512M`, `2G` or `1048576`.
    func bytes(_ name: String) throws(UsageError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let value = parseByteCount(text) else {
            throw UsageError("--\(name) wants a size like 512M, 2G or 1048576, not '\(text)'", command: command)
        }
        return value
    }
}

/// Parses `1048576`, `512K`, `512M`, `2G` (binary units; an optional trailing `B` or `iB`).
func parseByteCount(_ text: String) -> Int? {
    var digits = text.uppercased()
    for suffix in ["IB", "B"] where digits.hasSuffix(suffix) && digits.count > suffix.count {
        digits.removeLast(suffix.count)
        break
    }
    var multiplier = 1
    if let last = digits.last, let power = ["K": 1, "M": 2, "G": 3, "T": 4][String(last)] {
        multiplier = 1 << (10 * power)
        digits.removeLast()
    }
    guard let n = Int(digits), n >= 0 else { return nil }
    let (product, overflow) = n.multipliedReportingOverflow(by: multiplier)
    return overflow ? nil : product
}

private extension String {
    func replacingDoubleSpaces() -> String {
        var out = ""
        for c in self where !(c == " " && out.last == " ") { out.append(c) }
        return out
    }
}
