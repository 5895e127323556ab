import Glibc

/// Helpers shared by the descriptor-based back ends.
package enum POSIX {
    /// The text of `strerror(code)`, lower-cased at the start as it appears inside our messages
    /// ("connection refused", "no such file or directory").
    package static func describe(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        let s = String(cString: text)
        guard let first = s.first else { return "error \(code)" }
        return first.lowercased() + s.dropFirst()
    }

    /// Closes `fd`, ignoring EINTR (on Linux the descriptor is released even then).
    package static func close(_ fd: Int32) {
        if fd >= 0 { _ = Glibc.close(fd) }
    }

    /// Sets O_NONBLOCK on `fd`. Returns the errno on failure.
    static func setNonBlocking(_ fd: Int32) -> Int32? {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0 else { return errno }
        if flags & O_NONBLOCK != 0 { return nil }
        return fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ? errno : nil
    }

    /// Whether `fd` is a socket (writes then use `send(MSG_NOSIGNAL)` so a vanished peer cannot raise SIGPIPE).
    static func isSocket(_ fd: Int32) -> Bool {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        return (st.st_mode & S_IFMT) == S_IFSOCK
    }

    /// The number of open descriptors of this process (entries of /proc/self/fd), or nil when unavailable.
    /// Used by tests to check for leaks.
    package static func openDescriptorCount() -> Int? {
        directoryEntries("/proc/self/fd").map { $0.count - 1 }  // the directory stream's own descriptor
    }

    /// The names in a directory (without . and ..), in the directory's own order; nil when it cannot be opened. The
    /// one readdir loop (sysfs, configfs, /proc, tests' directories).
    package static func directoryEntries(_ path: String) -> [String]? {
        guard let dir = opendir(path) else { return nil }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}

/// The outcome of one non-blocking read or write attempt.
enum IOAttempt {
    /// `count` bytes were transferred (0 on read means end of stream).
    case done(Int)
    /// The call failed with this errno.
    case failed(Int32)
    /// The descriptor was already closed locally.
    case closed
}

/// Hex dump for trace logging: at most `limit` bytes, then the number left out.
func hexDump(_ bytes: some Collection<UInt8>, limit: Int = 512) -> String {
    let digits: [Character] = Array("0123456789abcdef")
    var out = ""
    out.reserveCapacity(min(bytes.count, limit) * 3)
    for (i, b) in bytes.prefix(limit).enumerated() {
        if i > 0 { out.append(" ") }
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 0xf)])
    }
    if bytes.count > limit { out += " …(+\(bytes.count - limit) bytes)" }
    return out
}

extension TransportError {
    /// A socket that cannot be bound (or listen) on its address (errno `e`): in use is `.busy`, not allowed
    /// `.permissionDenied`, not an address of this host `.notFound`.
    static func bindFailed(_ e: Int32, context: String) -> TransportError {
        let message = "\(context): \(POSIX.describe(e))"
        switch e {
        case EADDRINUSE: return TransportError(.busy, message, errno: e)
        case EACCES, EPERM: return TransportError(.permissionDenied, message, errno: e)
        case EADDRNOTAVAIL: return TransportError(.notFound, message, errno: e)
        default: return TransportError(.io, message, errno: e)
        }
    }
}
