import Foundation
import Spawn

/// Debian's Chromium, headless, as the page tests run it (the hub's control page, the operator page, the line
/// dashboard). Fails (does not skip) without it: tools/install-deps.sh installs it.
public enum HeadlessChromium {
    /// The browser's path.
    public static func path() throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") + ["/usr/bin", "/usr/local/bin"] {
            for name in ["chromium", "chromium-browser"] {
                let candidate = "\(dir)/\(name)"
                if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            }
        }
        throw TestFailure("chromium is not installed: the page tests need it (tools/install-deps.sh installs Debian's chromium)")
    }

    /// Runs a program off the cooperative pool; its stdout, after it exits (killed after `limit` seconds).
    public static func run(_ program: String, _ arguments: [String], limit: Double = 90) async throws -> (status: Int32, output: String) {
        try await offThePool {
            let process = try ChildProcess(program, arguments, environment: try environment(), stderr: .null)
            process.waitUntilExit(within: limit)
            return (process.terminationStatus, process.output!.textBlocking(timeout: 10))
        }
    }

    /// The browser's environment: its own TMPDIR under the tests' temporary root, so the org.chromium.Chromium.XXXXXX
    /// directories it makes there (and leaves when it is terminated) go when the test process exits.
    public static func environment() throws -> [String: String?] {
        ["TMPDIR": try TemporaryDirectory.make("chromium-tmp")]
    }

    /// Headless arguments with a private profile directory, then `extra`.
    public static func arguments(_ profile: String, _ extra: [String]) -> [String] {
        ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions", "--user-data-dir=\(profile)"] + extra
    }
}
