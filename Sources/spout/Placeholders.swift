import ArgumentParser

// Wired once the endpoint layer lands.
struct Serve: AsyncParsableCommand { func run() async throws { throw ValidationError("serve: not wired yet") } }
