import Foundation
import Glibc
import Support
import Synchronization

/// The tests' temporary directories: every one under one root per test process, `$TMPDIR/tuneup-tests.<pid>.XXXXXX`,
/// which is removed when the process exits (atexit). The directories are 0700; the root is 0711, so that a test that
/// runs a child as another user (`setpriv` to nobody) can open the one directory it hands over (chmod) while the rest
/// stay private and the root cannot be listed. A process that did not exit (killed, crashed) leaves its root;
/// the next test process to make a directory removes roots whose process no longer runs.
///
/// A path handed to a child process (a `tuneup` the test runs) lives under the root too: the tests wait for their
/// children, so the root outlives them.
public enum TemporaryDirectory {
    /// How a root's name starts; the owner's process id follows, then a dot.
    static let rootPrefix = "tuneup-tests."

    /// A new empty directory `<root>/<prefix>-XXXXXX`, mode 0700, made with mkdtemp (one short system call: fine on
    /// any thread). `prefix` names the test's use of it, so a path in a failure stays readable.
    public static func make(_ prefix: String) throws -> String {
        guard !prefix.isEmpty, !prefix.contains("/") else { throw TestFailure("temporary directory prefix \"\(prefix)\" is empty or has a /") }
        return try makeUnique(in: try root(), prefix + "-")
    }

    /// This process's root (made, and the sweep of dead processes' roots started, on first use).
    public static func root() throws -> String {
        try rootOrFailure.get()
    }

    /// Removes the roots in `parent` whose process no longer runs (kill(pid, 0) fails with ESRCH); keeps this
    /// process's, live processes' (EPERM counts as live), and anything not named like a root. Returns the removed paths.
    @discardableResult
    public static func sweepStaleRoots(in parent: String) -> [String] {
        guard let dir = opendir(parent) else { return [] }
        var names: [String] = []
        while let entry = readdir(dir) { names.append(name(of: entry)) }
        closedir(dir)
        var removed: [String] = []
        for name in names {
            guard let pid = ownerPID(ofRoot: name), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            let path = parent + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() else { continue }
            removeTree(path)
            removed.append(path)
        }
        return removed
    }

    /// The process id in a root's name (`tuneup-tests.<pid>.XXXXXX`); nil for any other name.
    static func ownerPID(ofRoot name: String) -> pid_t? {
        guard name.hasPrefix(rootPrefix) else { return nil }
        let parts = name.dropFirst(rootPrefix.count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let pid = pid_t(parts[0]), pid > 0 else { return nil }
        return pid
    }

    /// Removes `path` and everything under it, without following symbolic links; a directory a test left unwritable
    /// is made writable first. Best effort: what cannot be removed stays.
    static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            unlink(path)
            return
        }
        chmod(path, 0o700)
        if let dir = opendir(path) {
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = name(of: entry)
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(dir)
            for name in names { removeTree(path + "/" + name) }
        }
        rmdir(path)
    }

    // MARK: - The root

    private static let rootOrFailure: Result<String, TestFailure> = {
        let parent = systemTemporaryDirectory()
        // The sweep may have much to remove (a killed run's files): on the blocking pool, not this caller's thread,
        // and nobody waits for it (a process that ends first leaves the rest to the next one).
        try? BlockingPool.shared.submit(name: "test-roots-sweep") { sweepStaleRoots(in: parent) }
        do throws(TestFailure) {
            let root = try makeUnique(in: parent, rootPrefix + "\(getpid()).", mode: 0o711)
            creator.withLock { $0 = (getpid(), root) }
            atexit { TemporaryDirectory.removeRootAtExit() }
            return .success(root)
        } catch {
            return .failure(error)
        }
    }()

    /// The process that made the root, and the root: a forked child that calls exit() must not remove its parent's.
    private static let creator = Mutex<(pid: pid_t, root: String)?>(nil)

    private static func removeRootAtExit() {
        guard let (pid, root) = creator.withLock({ $0 }), pid == getpid() else { return }
        removeTree(root)
    }

    /// `$TMPDIR` (else /tmp), without a trailing slash.
    private static func systemTemporaryDirectory() -> String {
        var path = NSTemporaryDirectory()
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    /// mkdtemp of `parent/<start>XXXXXX`, then `mode` whatever the umask.
    private static func makeUnique(in parent: String, _ start: String, mode: mode_t = 0o700) throws(TestFailure) -> String {
        var template = Array((parent + "/" + start + "XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in mkdtemp(buffer.baseAddress!).map { String(cString: $0) } }
        guard let path = made else {
            throw TestFailure("cannot make a temporary directory \(parent)/\(start)XXXXXX: \(String(cString: strerror(errno)))")
        }
        chmod(path, mode)
        return path
    }

    private static func name(of entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafeBytes(of: entry.pointee.d_name) { bytes in
            String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }
}
