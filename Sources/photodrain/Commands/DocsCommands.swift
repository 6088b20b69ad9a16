import Foundation

/// `photodrain man [--out DIR]`: the manual pages, made from the command specs `--help` shows.
enum ManCommand: Command {
    static let spec = CommandSpec(
        name: "man",
        abstract: "Write the manual pages (roff), made from the same specs as --help.",
        arguments: "[COMMAND]",
        discussion: "Without --out, prints photodrain(1), or photodrain-COMMAND(1) for the command named. With --out, writes every page into DIR (Scripts/install puts them in <prefix>/share/man/man1).",
        options: [.option("out", "DIR", "Write every page, one file each (photodrain.1, photodrain-drain.1, ...), into this folder.")],
        positionals: (0, 1),
        examples: [("photodrain man drain | man -l -", "read drain's page"), ("photodrain man --out ~/.local/share/man/man1", "install the pages by hand")],
        exitCodes: [(0, "written"), (1, "the folder could not be written"), (64, "usage error")]
    )

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let pages = ManualPages.all(commands: PhotoDrainCLI.commands, version: PhotoDrainCLI.version)
        if let out = arguments.string("out") {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            for page in pages {
                try Data(page.text.utf8).write(to: URL(fileURLWithPath: out).appendingPathComponent(page.file), options: .atomic)
            }
            Console.shared.err("wrote \(pages.count) manual pages to \(out)")
            return .success
        }
        let wanted = arguments.positionals.first.map { "photodrain-\($0).1" } ?? "photodrain.1"
        guard let page = pages.first(where: { $0.file == wanted }) else {
            throw UsageError("no command '\(arguments.positionals.first ?? "")'", command: spec.name)
        }
        Console.shared.out(page.text)
        return .success
    }
}

/// `photodrain completions bash|zsh|fish`: a completion script, made from the command specs.
enum CompletionsCommand: Command {
    static let spec = CommandSpec(
        name: "completions",
        abstract: "Print a shell completion script (bash, zsh or fish), made from the same specs as --help.",
        arguments: "SHELL",
        discussion: "Scripts/install writes all three into the prefix (share/bash-completion/completions, share/zsh/site-functions, share/fish/vendor_completions.d).",
        options: [],
        positionals: (1, 1),
        examples: [("source <(photodrain completions bash)", "in this bash"),
                   ("photodrain completions fish > ~/.config/fish/completions/photodrain.fish", "for fish")],
        exitCodes: [(0, "printed"), (64, "usage error (an unknown shell)")]
    )

    static func run(_ arguments: ParsedArguments) async throws -> ExitCode {
        let name = arguments.positionals[0]
        guard let shell = ShellCompletions.Shell(rawValue: name) else {
            throw UsageError("no completions for '\(name)'; choose bash, zsh or fish", command: spec.name)
        }
        Console.shared.out(ShellCompletions.script(for: shell, commands: PhotoDrainCLI.commands))
        return .success
    }
}
