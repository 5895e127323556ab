import Failure
import Glibc
import Support

// The files `wearable record` and `wearable plot` write (docs/cli.md, `wearable record` and `wearable plot`), by a
// stricter rule than `SafeOutput`'s: a recording is data that cannot be made again.
//
// - Every path is checked before any file is created or written: a device, FIFO, socket or directory is refused, and
//   so is a symbolic link (outputs are never written through a link, nor is a link replaced), the file being read
//   (the same device and inode, however it is named) and, where the caller says so, any file that exists.
// - A file is created under a temporary name in its own directory (O_CREAT | O_EXCL | O_NOFOLLOW) and only renamed
//   to its name when it is complete (a plot) or when the recording really starts: until then nothing that exists is
//   touched, and a failure removes the temporary file alone. Renamed without replacing (`link`, which fails on an
//   existing name) unless replacing was allowed.
//
// Every function here blocks (open, write, fsync, rename): call them off the cooperative pool.

extension ErrorCodeIn where Domain == OutputFileError {
    /// The output exists and replacing it was not asked for (`record` without `--overwrite`).
    public static let exists = Self(rawValue: "exists")
    /// The output is a symbolic link: outputs are never written through one.
    public static let symbolicLink = Self(rawValue: "symbolic-link")
    /// The output is the file being read (a plot over its own recording).
    public static let isInput = Self(rawValue: "is-the-input")
}

public enum WearableOutputFiles {
    /// A file's identity: its device and inode.
    public struct Identity: Sendable, Equatable {
        public var device: UInt64
        public var inode: UInt64
    }

    /// What to do with a regular file already at an output's path.
    public enum Existing: Sendable {
        /// Refuse it, naming it (`record` without `--overwrite`).
        case refuse
        /// Replace it whole once the new file is complete (`plot`, `record --overwrite`).
        case replace
    }

    /// The identity of the file at `path` (links followed), nil when there is none.
    public static func identity(of path: String) -> Identity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Checks that `path` may be written: its directory exists and can be written, and there is nothing there, or a
    /// regular file that `existing` allows replacing and that is none of `inputs`. Returns the permission bits of the
    /// file there (nil: none). Nothing is created.
    public static func check(_ path: String, existing: Existing, inputs: [(path: String, identity: Identity)] = []) throws(OutputFileError) -> mode_t? {
        guard !path.isEmpty else { throw OutputFileError(.writeFailed, "cannot write '': an empty path") }
        let directory = directoryOf(path)
        var info = stat()
        guard lstat(path, &info) == 0 else {
            let code = errno
            guard code == ENOENT else { throw failure(path, code) }
            try checkDirectory(directory, for: path)
            return nil
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            let identity = Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
            if let input = inputs.first(where: { $0.identity == identity }) {
                throw OutputFileError(.isInput, "cannot write \(path): it is \(input.path == path ? "the file being read" : "\(input.path), the file being read")"
                    + " (name another output)")
            }
            if existing == .refuse {
                throw OutputFileError(.exists, "\(path) exists: give --overwrite to replace it, or another name (nothing was written)")
            }
            try checkDirectory(directory, for: path)
            return info.st_mode & 0o7777
        case S_IFLNK:
            throw OutputFileError(.symbolicLink, "cannot write \(path): it is a symbolic link (outputs are never written through a link: name "
                + "the file itself)")
        default:
            throw OutputFileError(.notRegularFile, "cannot write \(path): it is \(kind(info.st_mode)), not a regular file (output files are never "
                + "written over a device, FIFO, socket or directory)")
        }
    }

    /// A file being written under a temporary name in its destination's directory, renamed to `path` by `commit`.
    public struct Staged: Sendable {
        public let path: String
        public let temporary: String
        public let fd: Int32
        /// The permission bits of the file it replaces (nil: none was there when it was checked).
        public let replacing: mode_t?
    }

    /// Creates the temporary file for `path` (O_EXCL, O_NOFOLLOW: never an existing file, never through a link),
    /// with the permission bits `mode` of the file it is to replace. The caller writes `fd` and commits or discards.
    public static func stage(_ path: String, replacing mode: mode_t?) throws(OutputFileError) -> Staged {
        let directory = directoryOf(path)
        let name = path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
        for _ in 0..<16 {
            let temporary = directory + "/.\(name).tuneup-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode_t(0o666))
            if fd < 0 {
                if errno == EEXIST { continue }
                throw failure(path, errno, doing: "cannot create a file in \(directory)")
            }
            if let mode { _ = fchmod(fd, mode) }
            return Staged(path: path, temporary: temporary, fd: fd, replacing: mode)
        }
        throw failure(path, EEXIST, doing: "cannot create a file in \(directory)")
    }

    /// Gives the staged file its name: renamed over the file there with `existing` `.replace`, else only when there
    /// is none (a file that appeared since the check is kept and this is refused). Never over what is not a regular
    /// file. The descriptor stays open (a recording goes on writing it).
    public static func commit(_ staged: Staged, existing: Existing) throws(OutputFileError) {
        var info = stat()
        if lstat(staged.path, &info) == 0 {
            switch info.st_mode & S_IFMT {
            case S_IFREG where existing == .replace: break
            case S_IFREG:
                throw OutputFileError(.exists, "\(staged.path) exists: it appeared while the recording started (it is kept; give --overwrite to replace it)")
            case S_IFLNK:
                throw OutputFileError(.symbolicLink, "cannot write \(staged.path): it became a symbolic link (outputs are never written through a link)")
            default:
                throw OutputFileError(.notRegularFile, "cannot write \(staged.path): it became \(kind(info.st_mode)) while it was written")
            }
        }
        if existing == .replace {
            guard rename(staged.temporary, staged.path) == 0 else { throw failure(staged.path, errno) }
        } else {
            // link(2) fails on an existing name: no window in which a file made meanwhile would be replaced.
            if link(staged.temporary, staged.path) == 0 {
                unlink(staged.temporary)
            } else {
                let code = errno
                if code == EEXIST {
                    throw OutputFileError(.exists, "\(staged.path) exists: it appeared while the recording started (it is kept; give --overwrite to "
                        + "replace it)")
                }
                // A file system without hard links: the check above is the last word.
                guard code == EPERM || code == EOPNOTSUPP || code == EMLINK, rename(staged.temporary, staged.path) == 0 else {
                    throw failure(staged.path, code)
                }
            }
        }
        syncDirectory(directoryOf(staged.path))
    }

    /// Removes the staged file (the recording never started, or the plot failed) and closes it.
    public static func discard(_ staged: Staged, close closing: Bool = true) {
        unlink(staged.temporary)
        if closing { _ = close(staged.fd) }
    }

    /// Writes `bytes` to `path`: staged, written, flushed to disk and committed. `check` first (the caller checks
    /// every output before writing any: `mode` is what it returned).
    public static func write(_ bytes: [UInt8], to path: String, replacing mode: mode_t?, existing: Existing = .replace) throws(OutputFileError) {
        let staged = try stage(path, replacing: mode)
        do throws(OutputFileError) {
            try SafeOutput.writeAll(bytes, to: staged.fd, path: path)
            guard fsync(staged.fd) == 0 else { throw failure(path, errno) }
            try commit(staged, existing: existing)
        } catch {
            discard(staged)
            throw error
        }
        guard close(staged.fd) == 0 else { throw failure(path, errno) }
    }

    // MARK: A recording's name

    /// The base of a recording's files for `record PATH` (a trailing `.jsonl` or `.csv` dropped): nil, with the
    /// reason, when PATH does not end in a plain file name (empty, a directory's trailing `/`, `.` or `..`: `record .`
    /// would write a hidden `..jsonl`).
    public static func recordingBase(_ path: String) -> (base: String?, problem: String?) {
        var base = path
        for suffix in [".jsonl", ".csv"] where base.hasSuffix(suffix) {
            base = String(base.dropLast(suffix.count))
            break
        }
        let name = base.lastIndex(of: "/").map { String(base[base.index(after: $0)...]) } ?? base
        guard !name.isEmpty, name != ".", name != ".." else {
            return (nil, "record needs a file name for the recording (PATH writes PATH.jsonl and PATH.csv), got '\(path)'")
        }
        return (base, nil)
    }

    /// Checks that the recording's base names a file stem in a directory for files: refused when the base itself is a
    /// directory, device, FIFO or socket (`record /tmp`, `record /dev/full`), or when its directory is one of the
    /// system's directories of devices and kernel objects (/dev, /proc, /sys), where root could create files.
    public static func checkBase(_ base: String) async throws(OutputFileError) {
        try await Blocking.perform("record check", unavailable: { OutputFileError(.writeFailed, $0.message) }) { () throws(OutputFileError) in
            var info = stat()
            if stat(base, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
                let directory = info.st_mode & S_IFMT == S_IFDIR
                throw OutputFileError(.notRegularFile, "cannot record to \(base): it is \(kind(info.st_mode)), not a file name (PATH writes PATH.jsonl "
                    + "and PATH.csv\(directory ? "; for files in it, give \(base.hasSuffix("/") ? base : base + "/")NAME" : ""))")
            }
            let directory = directoryOf(base)
            guard let resolved = realpath(directory, nil) else { return }  // a missing directory: refused by `check`
            defer { free(resolved) }
            let real = String(cString: resolved)
            for system in ["/dev", "/proc", "/sys"] where real == system || real.hasPrefix(system + "/") {
                throw OutputFileError(.notRegularFile, "cannot record to \(base): "
                    + (real == system ? "\(system)" : "\(directory) is in \(system), which") + " holds devices or kernel objects, not files")
            }
        }
    }

    // MARK: Helpers

    static func checkDirectory(_ directory: String, for path: String) throws(OutputFileError) {
        var info = stat()
        guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw OutputFileError(.noDirectory, "cannot write \(path): \(directory) is not a directory")
        }
        guard access(directory, W_OK | X_OK) == 0 else { throw failure(path, errno, doing: "cannot create a file in \(directory)") }
    }

    static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            _ = fsync(fd)
            close(fd)
        }
    }

    /// The directory of `path` ("." for a bare name, "/" for a file at the root).
    public static func directoryOf(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = String(path[..<slash])
        return directory.isEmpty ? "/" : directory
    }

    /// "a character device", "a FIFO", ... for a file's mode.
    static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFDIR: return "a directory"
        case S_IFLNK: return "a symbolic link"
        case S_IFREG: return "a regular file"
        default: return "a special file"
        }
    }

    static func failure(_ path: String, _ code: Int32, doing: String? = nil) -> OutputFileError {
        let reason = String(cString: strerror(code))
        return OutputFileError(code == ENOENT || code == ENOTDIR ? .noDirectory : .writeFailed,
                               "cannot write \(path): \(doing.map { "\($0): \(reason)" } ?? reason)")
    }
}
