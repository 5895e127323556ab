import Failure
import Foundation
import Glibc
import Testing
import TestSupport
@testable import Support

/// Output files (docs/cli.md, "Output files"): created, or a regular file replaced whole; a symbolic link, device,
/// FIFO, socket or directory refused before anything is opened or created (the link and its target both kept).
@Suite struct SafeOutputTests {
    /// A fresh directory of the test's own.
    static func directory() throws -> String {
        try TemporaryDirectory.make("tuneup-safe-output")
    }

    static func kind(_ path: String, follow: Bool = false) -> mode_t? {
        var info = stat()
        guard (follow ? stat(path, &info) : lstat(path, &info)) == 0 else { return nil }
        return info.st_mode & S_IFMT
    }

    static func contents(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    /// What the directory holds (no temporary file is ever left behind).
    static func names(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    static func code(of body: @escaping @Sendable () throws -> Void) async throws -> OutputFileError.Code? {
        try await offThePool { () -> OutputFileError.Code? in
            do {
                try body()
                return nil
            } catch let error as OutputFileError {
                return error.code
            }
        }
    }

    @Test func aNewFileIsCreatedAndARegularFileReplacedWholeKeepingItsMode() async throws {
        let dir = try Self.directory()
        let path = dir + "/out.svg"
        try await offThePool { try SafeOutput.write("first\n", to: path) }
        #expect(Self.contents(path) == "first\n")
        chmod(path, 0o640)
        try await offThePool { try SafeOutput.write("second\n", to: path) }
        #expect(Self.contents(path) == "second\n")
        var info = stat()
        let statted = lstat(path, &info)
        #expect(statted == 0 && info.st_mode & 0o777 == 0o640, "the replaced file keeps its permission bits")
        #expect(Self.names(dir) == ["out.svg"])
    }

    @Test func aFIFOIsRefusedAndStaysAFIFO() async throws {
        let dir = try Self.directory()
        let fifo = dir + "/pipe"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(try await Self.code { try SafeOutput.write("x", to: fifo) } == .notRegularFile)
        // Opening for writing as it goes is refused too, and does not block for a reader.
        #expect(try await Self.code { _ = try SafeOutput.openForWriting(fifo) } == .notRegularFile)
        #expect(Self.kind(fifo) == S_IFIFO)
        #expect(Self.names(dir) == ["pipe"])
        do throws(OutputFileError) {
            _ = try SafeOutput.check(fifo, existing: .replace)
            Issue.record("a FIFO passed the check")
        } catch {
            #expect(error.message == "cannot write \(fifo): it is a FIFO, not a regular file (output files are never written over a device, "
                + "FIFO, socket or directory)")
            #expect(error.category == .localFile)
        }
    }

    /// Issue 31: one rule, the strict one. A symbolic link was followed and its target written (by `firmware read -o`,
    /// `records export --output`, ...): now it is refused, whatever it points at, and neither it nor its target is touched.
    @Test func aSymbolicLinkIsRefusedAndNeitherItNorItsTargetTouched() async throws {
        let dir = try Self.directory()
        let target = dir + "/real.jsonl", link = dir + "/link.jsonl"
        FileManager.default.createFile(atPath: target, contents: Data("old\n".utf8))
        #expect(symlink("real.jsonl", link) == 0)
        #expect(try await Self.code { try SafeOutput.write("new\n", to: link) } == .symbolicLink)
        #expect(try await Self.code { _ = try SafeOutput.openForWriting(link) } == .symbolicLink)
        #expect(Self.kind(link) == S_IFLNK, "the link is still a link")
        #expect(Self.contents(target) == "old\n", "its target is untouched")
        // A link whose target does not exist yet creates nothing.
        let dangling = dir + "/dangling.svg"
        #expect(symlink(dir + "/made.svg", dangling) == 0)
        #expect(try await Self.code { try SafeOutput.write("made\n", to: dangling) } == .symbolicLink)
        #expect(Self.kind(dangling) == S_IFLNK && Self.kind(dir + "/made.svg") == nil)
        do throws(OutputFileError) {
            _ = try SafeOutput.check(link, existing: .replace)
            Issue.record("a link passed the check")
        } catch {
            #expect(error.message == "cannot write \(link): it is a symbolic link (outputs are never written through a link: name the file itself)")
            #expect(error.category == .localFile)
        }
        #expect(Self.names(dir) == ["dangling.svg", "link.jsonl", "real.jsonl"], "no temporary file left behind")
    }

    /// Written as it goes (`sim speaker --record`): created, or an existing file replaced by the new one at once,
    /// keeping its permission bits; never opened in place.
    @Test func aFileWrittenAsItGoesIsANewFileKeepingTheMode() async throws {
        let dir = try Self.directory()
        let path = dir + "/take.wav"
        FileManager.default.createFile(atPath: path, contents: Data("an earlier take\n".utf8))
        chmod(path, 0o640)
        let fd = try await offThePool { try SafeOutput.openForWriting(path) }
        try SafeOutput.writeAll(Array("streamed\n".utf8), to: fd, path: path)
        close(fd)
        #expect(Self.contents(path) == "streamed\n")
        var info = stat()
        let statted = lstat(path, &info)
        #expect(statted == 0 && info.st_mode & 0o777 == 0o640)
        #expect(Self.names(dir) == ["take.wav"])
    }

    /// Nothing is replaced unless the caller allows it (`wearable record` without `--overwrite`), and an output that
    /// is the file being read is refused however it is named.
    @Test func anExistingFileIsKeptWhenReplacingIsNotAllowedAndTheInputIsNeverAnOutput() async throws {
        let dir = try Self.directory()
        let path = dir + "/rec.jsonl"
        FileManager.default.createFile(atPath: path, contents: Data("kept\n".utf8))
        #expect(try await Self.code { _ = try SafeOutput.check(path, existing: .refuse) } == .exists)
        let identity = try #require(SafeOutput.identity(of: path))
        #expect(link(path, dir + "/alias.jsonl") == 0)
        #expect(try await Self.code { _ = try SafeOutput.check(dir + "/alias.jsonl", existing: .replace, inputs: [(path, identity)]) } == .isInput)
        // A file that appears between the check and the commit is kept (link(2), not rename).
        let mode = try await offThePool { try SafeOutput.check(dir + "/new.csv", existing: .refuse) }
        FileManager.default.createFile(atPath: dir + "/new.csv", contents: Data("appeared\n".utf8))
        #expect(try await Self.code { try SafeOutput.write(Array("x".utf8), to: dir + "/new.csv", replacing: mode, existing: .refuse) } == .exists)
        #expect(Self.contents(dir + "/new.csv") == "appeared\n" && Self.contents(path) == "kept\n")
        #expect(Self.names(dir) == ["alias.jsonl", "new.csv", "rec.jsonl"])
    }

    @Test func aSymbolicLinkToAFIFOIsRefusedAndBothStay() async throws {
        let dir = try Self.directory()
        let fifo = dir + "/pipe", link = dir + "/out.svg"
        #expect(mkfifo(fifo, 0o600) == 0 && symlink(fifo, link) == 0)
        #expect(try await Self.code { try SafeOutput.write("x", to: link) } == .symbolicLink)
        #expect(Self.kind(link) == S_IFLNK && Self.kind(fifo) == S_IFIFO)
    }

    /// A character device is refused before it is opened (lstat only): /dev/null is read-checked, never written.
    @Test func aDeviceIsRefusedBeforeItIsOpened() async throws {
        let before = Self.kind("/dev/null")
        try #require(before == S_IFCHR)
        #expect(try await Self.code { try SafeOutput.write("x", to: "/dev/null") } == .notRegularFile)
        #expect(try await Self.code { _ = try SafeOutput.openForWriting("/dev/null") } == .notRegularFile)
        #expect(Self.kind("/dev/null") == S_IFCHR)
    }

    @Test func aDirectoryIsRefusedAndAMissingDirectoryNamed() async throws {
        let dir = try Self.directory()
        #expect(try await Self.code { try SafeOutput.write("x", to: dir) } == .notRegularFile)
        #expect(try await Self.code { try SafeOutput.write("x", to: dir + "/nodir/f.jsonl") } == .noDirectory)
        do throws(OutputFileError) {
            _ = try SafeOutput.check(dir + "/nodir/f.jsonl", existing: .replace)
            Issue.record("a missing directory passed the check")
        } catch {
            #expect(error.message == "cannot write \(dir)/nodir/f.jsonl: \(dir)/nodir is not a directory")
        }
        #expect(Self.names(dir).isEmpty)
    }

    @Test func aFileInTheCurrentDirectoryAndAtTheRootHaveTheirDirectories() {
        #expect(SafeOutput.directoryOf("f.svg") == ".")
        #expect(SafeOutput.directoryOf("/f.svg") == "/")
        #expect(SafeOutput.directoryOf("a/b/f.svg") == "a/b")
    }
}
