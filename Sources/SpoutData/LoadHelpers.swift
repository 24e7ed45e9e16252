import SpoutCore

/// Rewraps a driver error as a ``DataLoadError`` with `context`; file errors pass through.
func withDatabaseContext<Result>(_ context: @autoclosure () -> String, _ body: () throws -> Result) throws -> Result {
    do {
        return try body()
    } catch let error as DataFileError {
        throw error
    } catch let error as DataLoadError {
        throw error
    } catch {
        throw DataLoadError(.database, context(), underlying: error)
    }
}

/// Seconds since `start` on `clock`.
func secondsSince(_ start: ContinuousClock.Instant, clock: ContinuousClock = ContinuousClock()) -> Double {
    ProgressFormat.seconds(clock.now - start)
}
