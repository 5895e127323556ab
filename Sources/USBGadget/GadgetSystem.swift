import Glibc
import Transport

/// The file-system calls the configfs/FunctionFS setup makes, behind a protocol so the sequence and its error
/// handling can be tested without a UDC. Every call is blocking and runs on the gadget's own thread. Failures are
/// returned as errno values (nil = success). Internal.
protocol GadgetSystem: Sendable {
    /// The caller's effective user id.
    var effectiveUserID: UInt32 { get }
    /// `mkdir(path, 0755)`.
    func makeDirectory(_ path: String) -> Int32?
    /// `rmdir(path)`.
    func removeDirectory(_ path: String) -> Int32?
    /// Opens an existing file for writing (no create, no truncate) and writes `bytes` in one `write()`.
    func writeFile(_ path: String, _ bytes: [UInt8]) -> Int32?
    /// The contents of a (small) file; nil when it cannot be read.
    func readFile(_ path: String) -> [UInt8]?
    /// The entry names of a directory, without `.` and `..`; nil when it cannot be listed.
    func listDirectory(_ path: String) -> [String]?
    /// `symlink(target, path)`.
    func makeSymlink(target: String, at path: String) -> Int32?
    /// `unlink(path)`.
    func removeLink(_ path: String) -> Int32?
    /// Whether `path` is a symbolic link (not followed).
    func isSymlink(_ path: String) -> Bool
    /// Whether `path` exists (`lstat`).
    func exists(_ path: String) -> Bool
    /// `mount(source, path, "functionfs", 0, NULL)`.
    func mountFunctionFS(source: String, at path: String) -> Int32?
    /// `umount(path)`.
    func unmount(_ path: String) -> Int32?
    /// The FunctionFS mounts of the machine: (source = instance name, mount point), from /proc/self/mounts.
    func functionFSMounts() -> [(source: String, path: String)]
    /// Opens ep0 read-write; the descriptor, or the errno.
    func openEndpointZero(_ path: String) -> Result<Int32, TransportErrno>
    /// Writes `bytes` to `fd` in one `write()`; a short write counts as failure (EIO).
    func writeBlob(_ fd: Int32, _ bytes: [UInt8]) -> Int32?
    /// Closes `fd`.
    func closeDescriptor(_ fd: Int32)
    /// The ep0 calls on the open descriptor `fd`.
    func endpointZero(_ fd: Int32) -> any EndpointZero
}

/// The ep0 calls the event loop makes (blocking; ep0 thread only). Internal.
protocol EndpointZero: Sendable {
    /// Polled for POLLIN (events queued).
    var descriptor: Int32 { get }
    /// Reads whole event records into `buffer`; the byte count, or -errno.
    func readEvents(_ buffer: inout [UInt8]) -> Int
    /// Makes `call`: a write of the first `count` bytes of `data`, or a read of `count` bytes into `buffer`
    /// (count 0: the zero-length acknowledge or stall). The bytes transferred, or -errno.
    func perform(_ call: EP0Call, data: [UInt8], into buffer: inout [UInt8]) -> Int
}

/// ep0 through read(2) and write(2). Internal.
struct LinuxEndpointZero: EndpointZero {
    let descriptor: Int32

    func readEvents(_ buffer: inout [UInt8]) -> Int {
        let n = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        return n < 0 ? -Int(errno) : n
    }

    func perform(_ call: EP0Call, data: [UInt8], into buffer: inout [UInt8]) -> Int {
        var n: Int
        switch call {
        case .write(let count):
            if count == 0 {
                var dummy: UInt8 = 0
                n = write(descriptor, &dummy, 0)
            } else {
                n = data.withUnsafeBytes { write(descriptor, $0.baseAddress, min(count, $0.count)) }
            }
        case .read(let count):
            if count == 0 {
                var dummy: UInt8 = 0
                n = read(descriptor, &dummy, 0)
            } else {
                if buffer.count < count { buffer = [UInt8](repeating: 0, count: count) }
                n = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, count) }
            }
        }
        return n < 0 ? -Int(errno) : n
    }
}

/// An errno as an `Error`, for `Result`. Internal.
struct TransportErrno: Error, Sendable, Hashable {
    let code: Int32
}

/// The real calls. Internal.
struct LinuxGadgetSystem: GadgetSystem {
    var effectiveUserID: UInt32 { geteuid() }

    func makeDirectory(_ path: String) -> Int32? {
        mkdir(path, 0o755) == 0 ? nil : errno
    }

    func removeDirectory(_ path: String) -> Int32? {
        rmdir(path) == 0 ? nil : errno
    }

    func writeFile(_ path: String, _ bytes: [UInt8]) -> Int32? {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return errno }
        defer { Glibc.close(fd) }
        return writeBlob(fd, bytes)
    }

    func readFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while out.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return n == 0 ? out : nil }
            out += chunk[0..<n]
        }
        return out
    }

    func listDirectory(_ path: String) -> [String]? { POSIX.directoryEntries(path)?.sorted() }

    func makeSymlink(target: String, at path: String) -> Int32? {
        symlink(target, path) == 0 ? nil : errno
    }

    func removeLink(_ path: String) -> Int32? {
        unlink(path) == 0 ? nil : errno
    }

    func isSymlink(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFLNK
    }

    func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    func mountFunctionFS(source: String, at path: String) -> Int32? {
        mount(source, path, "functionfs", 0, nil) == 0 ? nil : errno
    }

    func unmount(_ path: String) -> Int32? {
        umount(path) == 0 ? nil : errno
    }

    func functionFSMounts() -> [(source: String, path: String)] {
        guard let bytes = readFile("/proc/self/mounts") else { return [] }
        return Self.parseMounts(String(decoding: bytes, as: UTF8.self))
    }

    /// The functionfs entries of a mounts table (`SOURCE MOUNTPOINT TYPE ...` lines, octal escapes decoded).
    static func parseMounts(_ text: String) -> [(source: String, path: String)] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 3, fields[2] == "functionfs" else { return nil }
            return (unescape(fields[0]), unescape(fields[1]))
        }
    }

    /// Decodes the `\040`-style octal escapes of /proc/mounts.
    static func unescape(_ field: Substring) -> String {
        var out: [UInt8] = []
        let bytes = Array(field.utf8)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "\\"), i + 4 <= bytes.count,
               bytes[(i + 1)..<(i + 4)].allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "7")).contains($0) }) {
                let d = bytes[(i + 1)..<(i + 4)].map { UInt16($0 - UInt8(ascii: "0")) }
                out.append(UInt8(truncatingIfNeeded: d[0] << 6 | d[1] << 3 | d[2]))
                i += 4
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    func openEndpointZero(_ path: String) -> Result<Int32, TransportErrno> {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        return fd >= 0 ? .success(fd) : .failure(TransportErrno(code: errno))
    }

    func writeBlob(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
        while true {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return errno }
            return n == bytes.count ? nil : EIO
        }
    }

    func closeDescriptor(_ fd: Int32) {
        if fd >= 0 { _ = Glibc.close(fd) }
    }

    func endpointZero(_ fd: Int32) -> any EndpointZero {
        LinuxEndpointZero(descriptor: fd)
    }
}

