import Foundation
import SpoutTestSupport
import Testing

/// The repository is self-contained: no source, test, script, benchmark or configuration file
/// refers to a path outside it.
///
/// The first round's tests read sample data from the build machines' shared folder by an
/// absolute path; on a user's clone (and in CI) they failed. Everything the suite needs is in
/// `Tests/Fixtures` or generated into the temporary directory at run time. This check keeps it
/// that way: it reads every file a user gets, except recorded benchmark results (which note the
/// binary a run measured) and the Markdown prose.
@Suite struct RepositoryHygieneTests {
    /// Paths that exist only on the machines Spout was built on. Assembled at run time so that
    /// this file does not match itself.
    static let forbidden: [String] = [
        "/" + "work/",
        "../" + "shared",
        "shared" + "/data",
    ]

    /// Folders that are not the repository's own files.
    static let skippedFolders: Set<String> = [".git", ".swiftpm", "results", ".cache", ".schemathesis"]

    @Test func noFileRefersToAPathOutsideTheRepository() throws {
        let root = TestFixtures.repositoryRoot
        var checked = 0
        var offenders: [String] = []
        for folder in ["Sources", "Tests", "scripts", "Benchmarks", "config", "sql", ".ci", "docs"] {
            let base = root.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: [.isRegularFileKey]) else {
                continue
            }
            for case let url as URL in walker {
                if Self.skippedFolders.contains(url.lastPathComponent) || url.lastPathComponent.hasPrefix(".build") {
                    walker.skipDescendants()
                    continue
                }
                guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                    url.pathExtension != "md"
                else { continue }
                guard let text = try? String(contentsOf: url, encoding: .utf8) else { continue }
                checked += 1
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    for needle in Self.forbidden where line.contains(needle) {
                        let relative = url.path.replacingOccurrences(of: root.path + "/", with: "")
                        offenders.append("\(relative):\(number + 1): \(needle)")
                    }
                }
            }
        }
        for file in ["Dockerfile", "Package.swift", ".dockerignore"] {
            guard let text = try? String(contentsOf: root.appendingPathComponent(file), encoding: .utf8) else { continue }
            checked += 1
            for needle in Self.forbidden where text.contains(needle) {
                offenders.append("\(file): \(needle)")
            }
        }
        #expect(checked > 100, "the walk found too few files (\(checked)); is the root right? \(root.path)")
        #expect(offenders.isEmpty, "paths outside the repository:\n\(offenders.joined(separator: "\n"))")
    }

    @Test func theFixturesAreInTheRepository() {
        for file in ["employees.sql", "load_employees.dump", "load_salaries3.dump"] {
            #expect(FileManager.default.fileExists(atPath: TestFixtures.testDB + "/" + file), "\(file)")
        }
        #expect(FileManager.default.fileExists(atPath: TestFixtures.petsTSV))
    }
}
