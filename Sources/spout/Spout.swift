import ArgumentParser
import SpoutEndpoints

/// The `spout` command: serves the configured endpoints by default.
///
/// Exit statuses (documented in docs/configuration.md, "Exit status"):
/// - 0: the command finished (for `serve`: a signal stopped it and it drained);
/// - 64 (`EX_USAGE`): a command-line mistake; the message is followed by the usage;
/// - 78 (`EX_CONFIG`): a ``ConfigurationError`` (a statement the database does not prepare
///   included); only `file:line:column: problem` is printed;
/// - 69 (`EX_UNAVAILABLE`): `spout check` could not reach the database, so it checked no SQL;
/// - 1: any other failure; only `Error: ` and the problem are printed.
@main
struct Spout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spout",
        abstract: "Streams SQL query results as JSON over HTTP.",
        subcommands: [Serve.self, Check.self, Init.self, Load.self, LoadPets.self, Generate.self, Export.self, Explain.self, Token.self, Keys.self],
        defaultSubcommand: Serve.self
    )

    /// `EX_CONFIG` of sysexits.h: the configuration is wrong, not the command line.
    static let configurationErrorStatus: Int32 = 78

    /// Parses the command line, then runs the command. Only mistakes found while parsing (and
    /// `ValidationError`s, which by ArgumentParser's convention are command-line mistakes)
    /// print the usage; a configuration error prints its location and message alone.
    static func main() async {
        MallocTuning.apply()
        var command: any ParsableCommand
        do {
            command = try await Self.asyncParseAsRoot()
        } catch {
            Self.exit(withError: error)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as ConfigurationError {
            var standardError = StandardError()
            print(error.description, to: &standardError)
            Self.exit(withError: ExitCode(Self.configurationErrorStatus))
        } catch {
            Self.exit(withError: error)
        }
    }
}
