import Glibc
import Simulator

/// Blocking file-system helpers for the state store. Callers run them on the store's dispatch queue, never on the
/// cooperative pool. Internal.
enum FileIO {
    static func error(_ what: String, _ path: String, _ e: Int32) -> SimulatorError {
        SimulatorError(.io, "cannot \(what) \(path): \(String(cString: strerror(e)))")
    }

    /// The directory part of `path` ("." when there is none).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let dir = String(path[..<slash])
        return dir.isEmpty ? "/" : dir
    }

    /// The last component of `path`.
    static func baseName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Creates the missing directories above `path` (mode 0700).
    static func makeParentDirectory(of path: String) throws(SimulatorError) {
        let dir = directory(of: path)
        var built = dir.hasPrefix("/") ? "" : "."
        for part in dir.split(separator: "/") {
            built += "/" + part
            if mkdir(built, 0o700) != 0 {
                let e = errno
                guard e == EEXIST else { throw error("create the directory", built, e) }
            }
        }
    }

    /// Opens (creating) the lock file.
    static func openLockFile(_ lockPath: String, statePath: String) throws(SimulatorError) -> Int32 {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw error("open the lock file of simulator state", lockPath, errno) }
        return fd
    }

    /// The lock file's marker, once the lock is held: whether the previous owner ended without closing the store
    /// (its marker "open" is still there: it was killed), then marks the file "open" for this owner.
    /// `clearOpenMarker` ends this owner's claim at a clean close.
    static func claimOpenMarker(_ fd: Int32, lockPath: String) throws(SimulatorError) -> Bool {
        var previous = [UInt8](repeating: 0, count: 4)
        let n = pread(fd, &previous, previous.count, 0)
        guard n >= 0 else { throw error("read the lock file", lockPath, errno) }
        let marker = Array("open".utf8)
        guard ftruncate(fd, 0) == 0, pwrite(fd, marker, marker.count, 0) == marker.count else {
            throw error("write the lock file", lockPath, errno)
        }
        return n == marker.count && previous == marker
    }

    /// Empties the lock file (a clean close); errors are ignored: the next owner then takes the RAM state as lost.
    static func clearOpenMarker(_ fd: Int32) {
        _ = ftruncate(fd, 0)
    }

    /// One non-blocking attempt at the exclusive lock: true when taken, false when another owner holds it.
    static func tryLock(_ fd: Int32, lockPath: String) throws(SimulatorError) -> Bool {
        while true {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            let e = errno
            switch e {
            case EINTR: continue
            case EWOULDBLOCK: return false
            default: throw error("lock", lockPath, e)
            }
        }
    }

    /// The whole file, or nil when it does not exist.
    static func readFile(_ path: String) throws(SimulatorError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            if e == ENOENT { return nil }
            throw error("open the simulator state file", path, e)
        }
        defer { _ = close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                out.append(contentsOf: chunk[0..<n])
            } else if n == 0 {
                return out
            } else if errno != EINTR {
                throw error("read the simulator state file", path, errno)
            }
        }
    }

    /// Replaces `path` with `bytes` atomically: temporary file in the same directory, fsync, rename, fsync of the
    /// directory. The temporary file is removed when anything fails.
    static func writeAtomically(_ bytes: [UInt8], to path: String, temporarySuffix: String) throws(SimulatorError) {
        let dir = directory(of: path)
        let temp = dir + "/." + baseName(of: path) + "." + temporarySuffix
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw error("create the temporary state file", temp, errno) }
        var done = false
        defer { if !done { _ = unlink(temp) } }
        do {
            defer { _ = close(fd) }
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
                if n > 0 {
                    offset += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    throw error("write the temporary state file", temp, n < 0 ? errno : EIO)
                }
            }
            guard fsync(fd) == 0 else { throw error("flush the temporary state file", temp, errno) }
        }
        guard rename(temp, path) == 0 else { throw error("replace the simulator state file", path, errno) }
        done = true
        // Make the rename itself durable; failure here does not undo the (already visible) new file.
        let dirFD = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            _ = fsync(dirFD)
            _ = close(dirFD)
        }
    }
}
