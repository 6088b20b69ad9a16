import Foundation
import Testing

/// The agent never reads the library: `--watch` only says it runs until signalled, so it does
/// not go with `--exit-when-idle`.
@Suite struct AgentWatchCLITests {
    @Test func watchAndExitWhenIdleAreAUsageError() throws {
        let ws = try Workspace()
        let run = try CLI.run(["agent", ws.library, "--store", ws.store, "--watch", "--exit-when-idle", "1"])
        #expect(run.status == 64, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("--exit-when-idle"))
        let help = try CLI.run(["help", "agent"])
        #expect(help.stdout.contains("drain DIR --to URL --watch"))
    }
}
