import ArgumentParser

// Wired once the endpoint and data layers land.
struct Serve: AsyncParsableCommand { func run() async throws { throw ValidationError("serve: not wired yet") } }
struct Load: ParsableCommand { func run() throws { throw ValidationError("load: not wired yet") } }
struct LoadPets: ParsableCommand { func run() throws { throw ValidationError("load-pets: not wired yet") } }
struct Generate: ParsableCommand { func run() throws { throw ValidationError("generate: not wired yet") } }
