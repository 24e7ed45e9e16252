import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Expands a path whose last component may hold `*`, `?` and `[...]` wildcards.
enum FilePattern {
    /// The regular files matching `pattern`, sorted by name. A pattern without wildcards is
    /// returned as is when the file exists; hidden files match only a pattern starting with `.`.
    static func expand(_ pattern: String) throws(ConfigurationError) -> [String] {
        let directory = (pattern as NSString).deletingLastPathComponent
        let name = (pattern as NSString).lastPathComponent
        guard name.contains(where: { $0 == "*" || $0 == "?" || $0 == "[" }) else {
            return FileManager.default.fileExists(atPath: pattern) ? [pattern] : []
        }
        var isDirectory: ObjCBool = false
        let listing = directory.isEmpty ? "." : directory
        guard FileManager.default.fileExists(atPath: listing, isDirectory: &isDirectory), isDirectory.boolValue else {
            return []
        }
        let listed: [String]
        do {
            listed = try FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)
        } catch {
            throw ConfigurationError(file: directory, message: "cannot list the directory of '\(pattern)'")
        }
        return listed.sorted().filter { candidate in
            fnmatch(name, candidate, FNM_PERIOD) == 0
        }.map { (directory as NSString).appendingPathComponent($0) }.filter { path in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
    }
}
