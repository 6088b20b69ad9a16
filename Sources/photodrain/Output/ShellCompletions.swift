/// Shell completions for bash, zsh and fish, made from the same `CommandSpec`s as `--help`:
/// command names, each command's options, and files or folders for the arguments.
enum ShellCompletions {
    enum Shell: String, CaseIterable {
        case bash, zsh, fish
    }

    static func script(for shell: Shell, commands: [any Command.Type]) -> String {
        switch shell {
        case .bash: bash(commands.map { $0.spec })
        case .zsh: zsh(commands.map { $0.spec })
        case .fish: fish(commands.map { $0.spec })
        }
    }

    /// Options whose values are paths get file completion.
    private static func takesPath(_ option: OptionSpec) -> Bool {
        guard let value = option.value else { return false }
        return value.contains("PATH") || value.contains("DIR") || value.contains("FILE")
    }

    private static func bash(_ specs: [CommandSpec]) -> String {
        var script = """
        # bash completion for photodrain; generated from its command specs (photodrain completions bash).
        _photodrain() {
            local cur prev command
            cur="${COMP_WORDS[COMP_CWORD]}"
            prev="${COMP_WORDS[COMP_CWORD-1]}"
            if [ "$COMP_CWORD" -eq 1 ]; then
                COMPREPLY=($(compgen -W "\(specs.map(\.name).joined(separator: " ")) help --help --version" -- "$cur"))
                return
            fi
            command="${COMP_WORDS[1]}"
            case "$command" in

        """
        for spec in specs {
            let options = spec.allOptions.map { "--" + $0.name }.joined(separator: " ")
            let pathOptions = spec.allOptions.filter(takesPath).map { "--" + $0.name }.joined(separator: "|")
            script += "        \(spec.name))\n"
            if !pathOptions.isEmpty {
                script += "            case \"$prev\" in \(pathOptions)) COMPREPLY=($(compgen -f -- \"$cur\")); return ;; esac\n"
            }
            script += "            if [[ \"$cur\" == -* ]]; then COMPREPLY=($(compgen -W \"\(options)\" -- \"$cur\")); else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
            script += "            ;;\n"
        }
        script += """
                help) COMPREPLY=($(compgen -W "\(specs.map(\.name).joined(separator: " "))" -- "$cur")) ;;
            esac
        }
        complete -o filenames -F _photodrain photodrain

        """
        return script
    }

    private static func zsh(_ specs: [CommandSpec]) -> String {
        func quoted(_ text: String) -> String {
            text.replacingOccurrences(of: "'", with: "'\\''").replacingOccurrences(of: "[", with: "\\[")
                .replacingOccurrences(of: "]", with: "\\]").replacingOccurrences(of: ":", with: "\\:")
        }
        var script = """
        #compdef photodrain
        # zsh completion for photodrain; generated from its command specs (photodrain completions zsh).
        _photodrain() {
            local -a commands
            commands=(

        """
        for spec in specs { script += "        '\(spec.name):\(quoted(spec.abstract))'\n" }
        script += """
            )
            if (( CURRENT == 2 )); then
                _describe 'command' commands
                return
            fi
            case "${words[2]}" in

        """
        for spec in specs {
            script += "        \(spec.name))\n            _arguments \\\n"
            for option in spec.allOptions {
                let action = option.value == nil ? "" : (takesPath(option) ? ":\(option.value ?? ""):_files" : ":\(option.value ?? ""): ")
                script += "                '--\(option.name)[\(quoted(option.help))]\(action)' \\\n"
            }
            script += "                '*:file:_files'\n            ;;\n"
        }
        script += """
            esac
        }
        _photodrain "$@"

        """
        return script
    }

    private static func fish(_ specs: [CommandSpec]) -> String {
        func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'" }
        var script = "# fish completion for photodrain; generated from its command specs (photodrain completions fish).\n"
        script += "complete -c photodrain -f\n"
        for spec in specs {
            script += "complete -c photodrain -n __fish_use_subcommand -a \(spec.name) -d \(quoted(spec.abstract))\n"
        }
        for spec in specs {
            for option in spec.allOptions {
                var line = "complete -c photodrain -n '__fish_seen_subcommand_from \(spec.name)' -l \(option.name)"
                if option.value != nil { line += takesPath(option) ? " -r -F" : " -r" }
                line += " -d \(quoted(option.help))"
                script += line + "\n"
            }
            if spec.positionals.max != 0 {
                script += "complete -c photodrain -n '__fish_seen_subcommand_from \(spec.name)' -F\n"
            }
        }
        return script
    }
}
