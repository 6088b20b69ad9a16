import Foundation

/// Which rows a runner works on and a report shows, by their path relative to the library root:
/// a path is in when it matches at least one `include` pattern (or there are none) and no
/// `exclude` pattern. Patterns have fnmatch(3) semantics with no flags: `*`, `?` and `[...]`
/// match any characters including `/` (so `*.MOV` matches at every depth and `2019/*` everything
/// under 2019), matching is case-sensitive, and a backslash quotes the next character.
///
/// A filter never changes what a scan records: every file keeps its row, verdict and upload
/// state; a filtered runner just leaves the rows outside the filter alone.
public struct PathFilter: Sendable, Equatable {
    /// Patterns of which a path must match one; empty means every path.
    public let include: [String]
    /// Patterns of which a path must match none.
    public let exclude: [String]

    /// Every path.
    public static let all = PathFilter(checked: [], [])

    /// A filter of `include` and `exclude` patterns. Throws `invalidArgument` for an empty
    /// pattern (it would match nothing, which is never what was meant).
    public init(include: [String] = [], exclude: [String] = []) throws(StoreError) {
        for pattern in include + exclude where pattern.isEmpty {
            throw StoreError(.invalidArgument, "an empty pattern matches no path; give a glob such as '*.jpg' or '2019/*'")
        }
        self.init(checked: include, exclude)
    }

    private init(checked include: [String], _ exclude: [String]) {
        self.include = include
        self.exclude = exclude
    }

    /// True when the filter lets every path through.
    public var isEmpty: Bool { include.isEmpty && exclude.isEmpty }

    /// True when `path` (relative, `/`-separated) is in.
    public func matches(_ path: String) -> Bool {
        (include.isEmpty || include.contains { FileTree.matches(pattern: $0, path: path) })
            && !exclude.contains { FileTree.matches(pattern: $0, path: path) }
    }

    /// An SQL condition true for the rows whose `column` is in; `1` without patterns. The
    /// patterns are SQL string literals (quotes doubled), matched by the `pd_fnmatch` function
    /// every store connection registers.
    func sql(_ column: String) -> String {
        func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
        var parts: [String] = []
        if !include.isEmpty {
            parts.append("(" + include.map { "pd_fnmatch(\(literal($0)), \(column))" }.joined(separator: " OR ") + ")")
        }
        if !exclude.isEmpty {
            parts.append("NOT (" + exclude.map { "pd_fnmatch(\(literal($0)), \(column))" }.joined(separator: " OR ") + ")")
        }
        return parts.isEmpty ? "1" : "(" + parts.joined(separator: " AND ") + ")"
    }
}
