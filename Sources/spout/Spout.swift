import ArgumentParser

/// The `spout` command: serves the configured endpoints by default.
@main
struct Spout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "spout",
        abstract: "Streams SQL query results as JSON over HTTP.",
        subcommands: [Serve.self, Load.self, LoadPets.self, Generate.self, Export.self],
        defaultSubcommand: Serve.self
    )
}
