import Failure
import Glibc

// Writing a file whose path the user gave (`--output`, a recording's PATH). The rule (docs/cli.md, "Output files"):
//
// - A path that does not exist is created; a regular file is replaced whole (a temporary file in the same directory,
//   written, flushed to disk and renamed over it: a reader sees the old file or the new one, never half of one; its
//   permission bits are kept).
// - A symbolic link is followed, and its target is written by the same rule (a link whose target does not exist yet
//   creates the target): the link itself is never renamed over or replaced.
// - A path that exists and is not a regular file (a device such as /dev/null or /dev/full, a FIFO, a socket, a
//   directory) is refused with one line, before anything is opened or created: nothing is written, nothing replaced.
//
// Every function here blocks (open, write, fsync, rename): call them from the blocking executor (`Blocking.perform`,
// a `SerialLane`, `DedicatedThread.run`), never from async code directly.

/// The errors of `SafeOutput`: a local file (exit 74).
public typealias OutputFileError = CodedFailure<OutputFileErrors>

/// The codes of `OutputFileError`.
public enum OutputFileErrors: ErrorDomain {
    public static func category(of code: OutputFileError.Code) -> FailureCategory { .localFile }
}

extension ErrorCodeIn where Domain == OutputFileError {
    /// The path exists and is not a regular file (nor a link to one): a device, FIFO, socket or directory.
    public static let notRegularFile = Self(rawValue: "not-a-regular-file")
    /// The directory the file would go in does not exist (or is not a directory).
    public static let noDirectory = Self(rawValue: "no-such-directory")
    /// The system refused to create, write or rename the file (permissions, a full disk, a read-only file system).
    public static let writeFailed = Self(rawValue: "write-failed")
}

/// Output files written by the rule above: never over a device, FIFO or symbolic link.
public enum SafeOutput {
    /// The file a path names once its symbolic links are followed.
    public struct Target: Sendable, Equatable {
        /// The path to write (`path` itself unless it is a symbolic link).
        public var path: String
        /// The permission bits of the regular file there (nil: nothing there yet).
        public var existingMode: mode_t?
    }

    /// Where writing `path` would write, following symbolic links (at most 40, as the kernel does). Throws
    /// `.notRegularFile` for a device, FIFO, socket or directory (the message names what it is), `.noDirectory` when
    /// the file's directory does not exist, `.writeFailed` for anything else the system refuses.
    public static func resolve(_ path: String) throws(OutputFileError) -> Target {
        guard !path.isEmpty else { throw OutputFileError(.writeFailed, "cannot write '': an empty path") }
        var current = path
        for _ in 0..<40 {
            var info = stat()
            guard lstat(current, &info) == 0 else {
                let code = errno
                guard code == ENOENT else { throw failure(path, current, code) }
                let directory = directoryOf(current)
                var dirInfo = stat()
                guard stat(directory, &dirInfo) == 0, dirInfo.st_mode & S_IFMT == S_IFDIR else {
                    throw OutputFileError(.noDirectory, "cannot write \(path): \(directory) is not a directory")
                }
                return Target(path: current, existingMode: nil)
            }
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                return Target(path: current, existingMode: info.st_mode & 0o7777)
            case S_IFLNK:
                current = try linkTarget(of: current, named: path)
            default:
                let what = kind(info.st_mode)
                throw OutputFileError(.notRegularFile, "cannot write \(path)\(current == path ? "" : " (\(current))"): it is \(what), "
                    + "not a regular file (output files are never written over a device, FIFO, socket or directory)")
            }
        }
        throw failure(path, current, ELOOP)
    }

    /// Writes `bytes` to `path` by the rule above: a new file, or the regular file there (or at the end of its
    /// symbolic links) replaced whole. Blocking.
    public static func write(_ bytes: [UInt8], to path: String) throws(OutputFileError) {
        let target = try resolve(path)
        let directory = directoryOf(target.path)
        let temporary = directory + "/.tuneup-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(0o666))
        guard fd >= 0 else { throw failure(path, directory, errno, doing: "cannot create a file in \(directory)") }
        var done = false
        defer {
            if !done { unlink(temporary) }
        }
        do throws(OutputFileError) {
            if let mode = target.existingMode { _ = fchmod(fd, mode) }
            try writeAll(bytes, to: fd, path: path)
            guard fsync(fd) == 0 else { throw failure(path, target.path, errno) }
        } catch {
            close(fd)
            throw error
        }
        guard close(fd) == 0 else { throw failure(path, target.path, errno) }
        // The path may have changed since it was resolved: never rename over what is not a regular file.
        var info = stat()
        if lstat(target.path, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
            throw OutputFileError(.notRegularFile, "cannot write \(path): it became \(kind(info.st_mode)) while it was written")
        }
        guard rename(temporary, target.path) == 0 else { throw failure(path, target.path, errno) }
        done = true
        let dirFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            _ = fsync(dirFD)
            close(dirFD)
        }
    }

    /// Writes `text` as UTF-8 to `path` (see `write(_:to:)`). Blocking.
    public static func write(_ text: String, to path: String) throws(OutputFileError) {
        try write(Array(text.utf8), to: path)
    }

    /// Opens `path` for writing in place, for a file written as it goes: created, or the regular file there (or at
    /// the end of its symbolic links) truncated. Refused as `resolve` refuses, and again when what was opened turns
    /// out not to be a regular file (nothing is truncated then). The caller closes the descriptor. Blocking.
    public static func openForWriting(_ path: String) throws(OutputFileError) -> Int32 {
        let target = try resolve(path)
        // O_NONBLOCK: a FIFO that appeared since must not block the open; it is refused below.
        let fd = open(target.path, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC, mode_t(0o666))
        guard fd >= 0 else { throw failure(path, target.path, errno) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw OutputFileError(.notRegularFile, "cannot write \(path): it is \(kind(info.st_mode)), not a regular file")
        }
        guard ftruncate(fd, 0) == 0 else {
            let code = errno
            close(fd)
            throw failure(path, target.path, code)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// Writes every byte of `bytes` to `fd` (a blocking descriptor), retrying interrupted and short writes. Throws
    /// `.writeFailed` naming `path` and the system's reason (a full disk: "No space left on device"). Blocking.
    public static func writeAll(_ bytes: [UInt8], to fd: Int32, path: String) throws(OutputFileError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure(path, path, errno)
            }
            offset += n
        }
    }

    // MARK: Helpers

    /// The directory of `path` ("." for a bare name, "/" for a file at the root).
    static func directoryOf(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let directory = String(path[..<slash])
        return directory.isEmpty ? "/" : directory
    }

    /// The target of the symbolic link at `link`, relative targets taken from the link's directory.
    private static func linkTarget(of link: String, named path: String) throws(OutputFileError) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(link, &buffer, buffer.count - 1)
        guard n > 0 else { throw failure(path, link, n == 0 ? ENOENT : errno) }
        let target = String(decoding: buffer[..<n].map { UInt8(truncatingIfNeeded: $0) }, as: UTF8.self)
        return target.hasPrefix("/") ? target : directoryOf(link) + "/" + target
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

    private static func failure(_ path: String, _ at: String, _ code: Int32, doing: String? = nil) -> OutputFileError {
        let reason = String(cString: strerror(code))
        let detail = doing.map { "\($0): \(reason)" } ?? (at == path ? reason : "\(at): \(reason)")
        return OutputFileError(code == ENOENT || code == ENOTDIR ? .noDirectory : .writeFailed, "cannot write \(path): \(detail)")
    }
}
