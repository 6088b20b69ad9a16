import Foundation
import Testing

@Suite struct HelpAndConfigCLITests {
    static let commands = ["inspect", "detect", "train", "analyze", "drain", "wake", "agent", "upload", "serve",
                           "status", "verdicts", "verify", "report", "demo", "bench", "bench-decode"]

    @Test(arguments: commands)
    func everyCommandHasCompleteHelp(command: String) throws {
        let help = try CLI.run(["help", command])
        #expect(help.status == 0)
        for section in ["OVERVIEW:", "USAGE: photodrain \(command)", "OPTIONS:", "--help", "EXAMPLES:", "EXIT STATUS:"] {
            #expect(help.stdout.contains(section), "\(command) help lacks \(section)")
        }
        let viaFlag = try CLI.run([command, "--help"])
        #expect(viaFlag.status == 0 && viaFlag.stdout == help.stdout)
        let overview = try CLI.run(["--help"])
        #expect(overview.stdout.contains("  \(command) "))
    }

    @Test func unknownFlagsAndBadValuesAreUsageErrors() throws {
        for arguments in [["drain", "x", "--slots", "0"], ["drain", ".", "--bias", "sideways", "--to", "http://127.0.0.1:1/u"],
                          ["serve"], ["wake", "."], ["analyze", ".", "--frobnicate"], ["verdicts", ".", "--format", "xml"]] {
            let result = try CLI.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("photodrain \(arguments[0]):"))
        }
    }

    @Test func configurationFileSuppliesDefaultsAndFlagsOverrideThem() throws {
        let ws = try Workspace()
        let config = ws.root.appendingPathComponent("config.json").path
        // An unreachable destination: the upload must say it tried that URL's host.
        try Data(#"{"to": "http://127.0.0.1:9/uploads", "interopVersion": 8}"#.utf8).write(to: URL(fileURLWithPath: config))
        let viaConfig = try CLI.run(["upload", CLI.sample("hopper.jpg"), "--config", config, "--json"])
        #expect(viaConfig.status == 75)
        #expect(viaConfig.stdout.contains("connection-failed"))
        // A flag wins over the file: a bad interop version on the command line is rejected.
        let overridden = try CLI.run(["upload", CLI.sample("hopper.jpg"), "--config", config, "--interop-version", "2"])
        #expect(overridden.status == 64)
        // A malformed file is a one-line usage error naming the key.
        try Data(#"{"slots": "three"}"#.utf8).write(to: URL(fileURLWithPath: config))
        let bad = try CLI.run(["status", ".", "--config", config])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("slots"))
        // PHOTODRAIN_CONFIG is read too.
        try Data(#"{"to": "http://127.0.0.1:9/uploads"}"#.utf8).write(to: URL(fileURLWithPath: config))
        let viaEnvironment = try CLI.run(["upload", CLI.sample("hopper.jpg")], environment: ["PHOTODRAIN_CONFIG": config])
        #expect(viaEnvironment.status == 75)
    }

    /// A misspelt key is refused, naming it and the key meant, not ignored.
    @Test(arguments: [("tokenfile", "tokenFile"), ("token-file", "tokenFile"), ("max-attemps", nil), ("inflightlimit", "inflightLimit")] as [(String, String?)])
    func unknownConfigurationKeysAreRefused(key: String, meant: String?) throws {
        let ws = try Workspace()
        let config = ws.root.appendingPathComponent("config.json").path
        try Data(#"{"to": "http://127.0.0.1:9/uploads", "\#(key)": "x"}"#.utf8).write(to: URL(fileURLWithPath: config))
        let result = try CLI.run(["status", ".", "--config", config])
        #expect(result.status == 64)
        #expect(result.stderr.contains("unknown key \"\(key)\""), "\(result.stderr)")
        if let meant {
            #expect(result.stderr.contains("did you mean \"\(meant)\""), "\(result.stderr)")
        } else {
            #expect(result.stderr.contains("the keys are"), "\(result.stderr)")
        }
    }

    @Test func noColorWhenPiped() throws {
        let result = try CLI.run(["inspect", "/nonexistent.jpg"])
        #expect(!result.stdout.contains("\u{1B}["))
    }
}

/// The demo's table showed `unanalysab`; every label is shown whole.
@Suite struct DemoCLITests {
    @Test func theDemoTableShowsEveryLabelWhole() throws {
        let demo = try CLI.run(["demo"])
        #expect(demo.status == 0, "\(demo.stderr)")
        let row = try #require(demo.lines.first { $0.hasPrefix("LICENSES.md ") })
        #expect(row.split(separator: " ").contains("unanalysable"), "\(row)")
    }
}
