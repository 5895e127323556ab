import Glibc
import Testing
import Transport

/// Whether this kernel offers RFCOMM sockets (it does not on the build machines: errno 97).
let hostHasBluetooth: Bool = {
    let fd = socket(AF_BLUETOOTH, Int32(SOCK_STREAM.rawValue), 3 /* BTPROTO_RFCOMM */)
    if fd >= 0 { close(fd) }
    return fd >= 0
}()

/// Number of open descriptors of this process (entries of /proc/self/fd).
func openDescriptors() -> Int { POSIX.openDescriptorCount() ?? -1 }

/// What descriptor `fd` refers to ("socket:[12345]", "pipe:[678]"), or nil when it is not open.
func descriptorTarget(_ fd: Int32) -> String? {
    var buffer = [CChar](repeating: 0, count: 256)
    let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    return String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Every open descriptor's target, to check that an object (say a socket inode) is no longer held by anything.
func openDescriptorTargets() -> Set<String> {
    Set((POSIX.directoryEntries("/proc/self/fd") ?? []).compactMap { Int32($0).flatMap(descriptorTarget) })
}

/// Runs `body`, expecting a `TransportError`; records an issue (and returns nil) otherwise.
func expectTransportError(
    _ code: TransportError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
) async -> TransportError? {
    do {
        try await body()
        Issue.record("expected TransportError(.\(code)), got success", sourceLocation: sourceLocation)
    } catch let error as TransportError {
        #expect(error.code == code, "wrong code for: \(error.message)", sourceLocation: sourceLocation)
        #expect(!error.message.contains("\n"), "message is not one line: \(error.message)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected TransportError(.\(code)), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// A listening Unix stream socket on a fresh abstract address (non-blocking), and a function that connects to it.
func unixListener() throws -> (fd: Int32, connect: @Sendable () throws -> Int32) {
    let name = "tuneup-bt-test-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let length = withUnsafeMutableBytes(of: &address.sun_path) { raw -> Int in
        raw[0] = 0  // abstract namespace: no file to clean up
        let bytes = Array(name.utf8)
        for (i, b) in bytes.enumerated() { raw[i + 1] = b }
        return MemoryLayout<sa_family_t>.size + 1 + bytes.count
    }
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    guard fd >= 0 else { throw TransportError(.io, "socket failed") }
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
    }
    guard bound == 0, listen(fd, 8) == 0 else {
        close(fd)
        throw TransportError(.io, "bind/listen failed")
    }
    let target = address
    return (fd, {
        var a = target
        let c = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard c >= 0 else { throw TransportError(.io, "socket failed") }
        let rc = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(c, $0, socklen_t(length)) }
        }
        guard rc == 0 else {
            close(c)
            throw TransportError(.io, "connect failed: \(errno)")
        }
        return c
    })
}

/// Reads from `transport` until `count` bytes have arrived.
func receiveExactly(_ count: Int, from transport: any Transport) async throws -> [UInt8] {
    var out: [UInt8] = []
    while out.count < count { out += try await transport.receive() }
    return out
}

/// The task's value; if it has not finished after `limit`, the task is cancelled first (so a bug that leaves it
/// waiting makes the test fail instead of hanging the run).
func value<T: Sendable>(of task: Task<T, any Error>, cancellingAfter limit: Duration) async throws -> T {
    let watchdog = Task {
        try await Task.sleep(for: limit)
        task.cancel()
    }
    defer { watchdog.cancel() }
    return try await task.value
}

/// Number of threads of this process (entries of /proc/self/task).
func threadCount() -> Int { POSIX.directoryEntries("/proc/self/task")?.count ?? -1 }

/// The inode of the file `fd` refers to (a pipe's, a socket's).
func inode(of fd: Int32) -> UInt64? {
    var info = stat()
    return fstat(fd, &info) == 0 ? UInt64(info.st_ino) : nil
}

/// The inodes of the files some epoll instance of this process watches (the `ino:` of each `tfd:` line of an epoll
/// descriptor's /proc/self/fdinfo entry): whether the I/O reactor still watches a pipe or socket, whatever the
/// descriptor number it watches it through.
func epollWatchedInodes() -> Set<UInt64> {
    var inodes = Set<UInt64>()
    for name in POSIX.directoryEntries("/proc/self/fd") ?? [] {
        guard let fd = Int32(name), descriptorTarget(fd) == "anon_inode:[eventpoll]" else { continue }
        let info = open("/proc/self/fdinfo/\(fd)", O_RDONLY | O_CLOEXEC)
        guard info >= 0 else { continue }
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(info, &chunk, chunk.count)
            if n <= 0 { break }
            text += chunk[0..<n]
        }
        close(info)
        for line in String(decoding: text, as: UTF8.self).split(separator: "\n") where line.hasPrefix("tfd:") {
            for field in line.split(separator: " ") where field.hasPrefix("ino:") {
                if let value = UInt64(field.dropFirst(4), radix: 16) { inodes.insert(value) }
            }
        }
    }
    return inodes
}
