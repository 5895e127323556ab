import Failure
import Glibc

// Writing a file whose path the user gave (`--output`, `-o`, a recording's PATH). The one rule (docs/cli.md, "Output
// files"), for every command that writes one (`wearable record` and `plot`, `firmware read -o`, `records export
// --output`, `records attachment -o`, labels, `sim speaker --record`):
//
// - Every path is checked before any file is created or written (`check`): a device, FIFO, socket or directory is
//   refused, and so is a symbolic link (outputs are never written through a link, nor is a link replaced), the file
//   being read (the same device and inode, however it is named) and, where the caller says so, any file that exists.
// - A file is created under a temporary name in its own directory (O_CREAT | O_EXCL | O_NOFOLLOW: never an existing
//   file, never through a link), written, flushed to disk and only then renamed to its name (`stage`, `commit`); a
//   file written as it goes gets its name when it starts (a recording) or at once (`openForWriting`). Until then
//   nothing that exists is touched, and a failure removes the temporary file alone: a reader sees the old file or
//   the new one, never half of one, and a replaced file keeps its permission bits. Renamed without replacing
//   (`link`, which fails on an existing name) unless replacing was allowed.
//
// Every function here blocks (open, write, fsync, rename): call them from the blocking executor (`Blocking.perform`,
// `Blocking.run`, a `SerialLane`), never from async code directly.

/// The errors of `SafeOutput`: a local file (exit 74).
public typealias OutputFileError = CodedFailure<OutputFileErrors>

/// The codes of `OutputFileError`.
public enum OutputFileErrors: ErrorDomain {
    public static func category(of code: OutputFileError.Code) -> FailureCategory { .localFile }
}

extension ErrorCodeIn where Domain == OutputFileError {
    /// The path exists and is not a regular file: a device, FIFO, socket or directory.
    public static let notRegularFile = Self(rawValue: "not-a-regular-file")
    /// The directory the file would go in does not exist (or is not a directory).
    public static let noDirectory = Self(rawValue: "no-such-directory")
    /// The system refused to create, write or rename the file (permissions, a full disk, a read-only file system).
    public static let writeFailed = Self(rawValue: "write-failed")
    /// The output exists and replacing it was not asked for (`wearable record` without `--overwrite`).
    public static let exists = Self(rawValue: "exists")
    /// The output is a symbolic link: outputs are never written through one.
    public static let symbolicLink = Self(rawValue: "symbolic-link")
    /// The output is the file being read (a plot over its own recording).
    public static let isInput = Self(rawValue: "is-the-input")
}

/// Output files written by the rule above.
public enum SafeOutput {
    /// A file's identity: its device and inode.
    public struct Identity: Sendable, Equatable {
        public var device: UInt64
        public var inode: UInt64
    }

    /// What to do with a regular file already at an output's path.
    public enum Existing: Sendable {
        /// Refuse it, naming it (`wearable record` without `--overwrite`).
        case refuse
        /// Replace it whole once the new file is complete (every other output, `record --overwrite`).
        case replace
    }

    /// The identity of the file at `path` (links followed: an input may be named through one), nil when there is none.
    public static func identity(of path: String) -> Identity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// Checks that `path` may be written: its directory exists and can be written, and there is nothing there, or a
    /// regular file that `existing` allows replacing and that is none of `inputs`. Returns the permission bits of the
    /// file there (nil: none). Nothing is opened or created (lstat only: a device or FIFO is never opened).
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
    /// is none (a file that appeared since the check is kept and this is refused). Never over a symbolic link or what
    /// is not a regular file. The descriptor stays open (a recording goes on writing it).
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

    /// Removes the staged file (the recording never started, the write failed) and closes it.
    public static func discard(_ staged: Staged, close closing: Bool = true) {
        unlink(staged.temporary)
        if closing { _ = close(staged.fd) }
    }

    /// Writes `bytes` to `path`: staged, written, flushed to disk and committed. `check` first (a caller with several
    /// outputs checks every one before writing any: `mode` is what it returned).
    public static func write(_ bytes: [UInt8], to path: String, replacing mode: mode_t?, existing: Existing = .replace) throws(OutputFileError) {
        let staged = try stage(path, replacing: mode)
        do throws(OutputFileError) {
            try writeAll(bytes, to: staged.fd, path: path)
            guard fsync(staged.fd) == 0 else { throw failure(path, errno) }
            try commit(staged, existing: existing)
        } catch {
            discard(staged)
            throw error
        }
        guard close(staged.fd) == 0 else { throw failure(path, errno) }
    }

    /// Writes `bytes` to `path`, the one output of a command: checked (an existing regular file is replaced whole),
    /// then written as `write(_:to:replacing:existing:)` does.
    public static func write(_ bytes: [UInt8], to path: String) throws(OutputFileError) {
        let mode = try check(path, existing: .replace)
        try write(bytes, to: path, replacing: mode)
    }

    /// Writes `text` as UTF-8 to `path` (see `write(_:to:)`).
    public static func write(_ text: String, to path: String) throws(OutputFileError) {
        try write(Array(text.utf8), to: path)
    }

    /// Opens `path` for a file written as it goes (`sim speaker --record`): checked as `write` checks, created under a
    /// temporary name and given its name at once (an existing regular file is replaced by the new, empty one, keeping
    /// its permission bits). The caller writes and closes the descriptor.
    public static func openForWriting(_ path: String) throws(OutputFileError) -> Int32 {
        let mode = try check(path, existing: .replace)
        let staged = try stage(path, replacing: mode)
        do throws(OutputFileError) {
            try commit(staged, existing: .replace)
        } catch {
            discard(staged)
            throw error
        }
        return staged.fd
    }

    /// Writes every byte of `bytes` to `fd` (a blocking descriptor), retrying interrupted and short writes. Throws
    /// `.writeFailed` naming `path` and the system's reason (a full disk: "No space left on device").
    public static func writeAll(_ bytes: [UInt8], to fd: Int32, path: String) throws(OutputFileError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure(path, errno)
            }
            offset += n
        }
    }

    // MARK: Helpers

    /// The directory of `path` ("." for a bare name, "/" for a file at the root).
    public static func directoryOf(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = String(path[..<slash])
        return directory.isEmpty ? "/" : directory
    }

    /// "a character device", "a FIFO", ... for a file's mode.
    public static func kind(_ mode: mode_t) -> String {
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

    static func failure(_ path: String, _ code: Int32, doing: String? = nil) -> OutputFileError {
        let reason = String(cString: strerror(code))
        return OutputFileError(code == ENOENT || code == ENOTDIR ? .noDirectory : .writeFailed,
                               "cannot write \(path): \(doing.map { "\($0): \(reason)" } ?? reason)")
    }
}
