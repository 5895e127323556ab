import Foundation
import Glibc
import Testing
import TestSupport

/// The tests' temporary directories (TestSupport's `TemporaryDirectory`): made private under this process's root;
/// roots of processes that no longer run are swept, nothing else.
@Suite struct TemporaryDirectoryTests {
    static func mode(_ path: String) -> (isDirectory: Bool, permissions: mode_t)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (info.st_mode & S_IFMT == S_IFDIR, info.st_mode & 0o7777)
    }

    @Test func aMadeDirectoryIsPrivateUnderThisProcesssRoot() async throws {
        let (root, first, second) = try await offThePool {
            (try TemporaryDirectory.root(), try TemporaryDirectory.make("temporary-test"), try TemporaryDirectory.make("temporary-test"))
        }
        #expect(root.hasPrefix(NSTemporaryDirectory()) && (root as NSString).lastPathComponent.hasPrefix("tuneup-tests.\(getpid())."), "\(root)")
        let rootMode = try #require(Self.mode(root))
        #expect(rootMode.isDirectory && rootMode.permissions == 0o711, "root: \(String(rootMode.permissions, radix: 8))")
        for made in [first, second] {
            #expect((made as NSString).deletingLastPathComponent == root, "\(made)")
            #expect((made as NSString).lastPathComponent.hasPrefix("temporary-test-"), "\(made)")
            let mode = try #require(Self.mode(made), "\(made) does not exist")
            #expect(mode.isDirectory && mode.permissions == 0o700, "\(made): \(String(mode.permissions, radix: 8))")
            #expect(try FileManager.default.contentsOfDirectory(atPath: made).isEmpty)
        }
        #expect(first != second)
        #expect(throws: TestFailure.self) { try TemporaryDirectory.make("a/b") }
    }

    /// A root whose process was killed is removed whole (an unwritable directory in it too; a symbolic link in it
    /// removed, not its target); a live process's root, this process's, and anything named otherwise are kept.
    @Test func theSweepRemovesOnlyRootsOfProcessesThatNoLongerRun() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        let dead = process.processIdentifier
        try await waitUntil("/bin/true exits and is reaped") { kill(dead, 0) == -1 && errno == ESRCH }
        let live = getppid()
        #expect(kill(live, 0) == 0 || errno == EPERM)

        let parent = try TemporaryDirectory.make("sweep-test")
        let deadRoot = parent + "/tuneup-tests.\(dead).aB3xYz"
        let kept = [
            parent + "/tuneup-tests.\(live).cD4wVu", parent + "/tuneup-tests.\(getpid()).eF5tSr",
            parent + "/tuneup-tests-\(dead)-old", parent + "/tuneup-tests.\(dead)", parent + "/tuneup-tests.x\(dead).gH6qPo",
        ]
        let outside = parent + "/outside.txt"
        let removed = try await offThePool {
            let files = FileManager.default
            for path in [deadRoot + "/station-aaaaaa/locked"] + kept {
                try files.createDirectory(atPath: path, withIntermediateDirectories: true)
            }
            _ = files.createFile(atPath: deadRoot + "/station-aaaaaa/locked/records.sqlite", contents: Data("x".utf8))
            _ = files.createFile(atPath: outside, contents: Data("kept".utf8))
            try files.createSymbolicLink(atPath: deadRoot + "/link", withDestinationPath: outside)
            _ = files.createFile(atPath: parent + "/tuneup-tests.\(dead).iJ7nMl", contents: Data())  // a file, not a root
            chmod(deadRoot + "/station-aaaaaa/locked", 0o500)
            return TemporaryDirectory.sweepStaleRoots(in: parent)
        }
        #expect(removed == [deadRoot])
        #expect(Self.mode(deadRoot) == nil, "\(deadRoot) was not removed")
        for path in kept + [parent + "/tuneup-tests.\(dead).iJ7nMl"] { #expect(Self.mode(path) != nil, "\(path) was removed") }
        #expect(FileManager.default.contents(atPath: outside) == Data("kept".utf8), "the link's target was removed")
    }
}
