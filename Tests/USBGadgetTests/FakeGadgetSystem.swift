import Glibc
import Synchronization
import Transport
@testable import USBGadget

/// An in-memory configfs + FunctionFS with configfs's rules (default groups, rmdir only of empty user directories,
/// attribute files that exist once their directory does), a call log, and injected failures. Its ep0 is one end of a
/// SOCK_SEQPACKET socket pair; `FakeHost` drives the other end.
final class FakeGadgetSystem: GadgetSystem, Sendable {
    struct State {
        var dirs: Set<String> = []
        /// Directories configfs creates itself (removed with their parent, never by rmdir).
        var defaults: Set<String> = []
        var files: [String: [UInt8]] = [:]
        var links: [String: String] = [:]
        var mounts: [(source: String, path: String)] = []
        var log: [String] = []
        var failures: [String: Int32] = [:]
        var blobs: [[UInt8]] = []
        var uid: UInt32 = 0
        var ep0: Int32 = -1
        var hostEnd: Int32 = -1
        var closedEP0 = false
    }

    let state = Mutex(State())
    let configfsRoot: String
    let udcDirectory: String

    /// A machine with `udcs` in `/udc`, configfs at `/cfg` (with `usb_gadget` when `libcomposite`).
    init(udcs: [String] = ["dummy_udc.0"], configfs: Bool = true, libcomposite: Bool = true, root: String = "/cfg") {
        configfsRoot = root
        udcDirectory = "/udc"
        state.withLock { s in
            s.dirs = ["/", "/dev", "/udc"]
            for u in udcs { s.dirs.insert("/udc/" + u) }
            if configfs {
                s.dirs.insert(root)
                s.dirs.insert(root + "/usb_gadget")
                if !libcomposite { s.dirs.remove(root + "/usb_gadget"); s.files[root + "/.keep"] = [] }
            }
        }
    }

    var log: [String] { state.withLock { $0.log } }
    func clearLog() { state.withLock { $0.log = [] } }
    func fail(_ key: String, _ code: Int32) { state.withLock { $0.failures[key] = code } }
    var blobs: [[UInt8]] { state.withLock { $0.blobs } }
    var hostEnd: Int32 { state.withLock { $0.hostEnd } }
    func setUID(_ uid: UInt32) { state.withLock { $0.uid = uid } }
    func file(_ path: String) -> String? { state.withLock { $0.files[path].map { String(decoding: $0, as: UTF8.self) } } }
    func isDirectory(_ path: String) -> Bool { state.withLock { $0.dirs.contains(path) } }

    /// Every directory, file, link and mount under `prefix`.
    func entries(under prefix: String) -> [String] {
        state.withLock { s in
            (Array(s.dirs) + Array(s.files.keys) + Array(s.links.keys) + s.mounts.map(\.path)).filter { $0.hasPrefix(prefix + "/") }.sorted()
        }
    }

    /// Adds a directory tree as an earlier run could have left it.
    func addDirectory(_ path: String, isDefault: Bool = false) {
        state.withLock { s in
            s.dirs.insert(path)
            if isDefault { s.defaults.insert(path) }
        }
    }
    func addLink(_ path: String, to target: String) { state.withLock { $0.links[path] = target } }
    func addFile(_ path: String, _ text: String) { state.withLock { $0.files[path] = Array(text.utf8) } }
    func addMount(source: String, path: String) { state.withLock { $0.mounts.append((source, path)) } }

    private static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    private func failure(_ key: String, in s: State) -> Int32? { s.failures[key] }

    var effectiveUserID: UInt32 { state.withLock { $0.uid } }

    func makeDirectory(_ path: String) -> Int32? {
        state.withLock { s in
            s.log.append("mkdir \(path)")
            if let e = failure("mkdir \(path)", in: s) { return e }
            if s.dirs.contains(path) || s.files[path] != nil || s.links[path] != nil { return EEXIST }
            guard s.dirs.contains(Self.parent(path)) else { return ENOENT }
            s.dirs.insert(path)
            // configfs default groups
            let p = Self.parent(path)
            var groups: [String] = []
            if p == configfsRoot + "/usb_gadget" {
                groups = ["functions", "configs", "strings", "os_desc"]
            } else if p.hasSuffix("/configs"), Self.parent(Self.parent(p)) == configfsRoot + "/usb_gadget" {
                groups = ["strings"]
            }
            for g in groups {
                s.dirs.insert(path + "/" + g)
                s.defaults.insert(path + "/" + g)
            }
            return nil
        }
    }

    func removeDirectory(_ path: String) -> Int32? {
        state.withLock { s in
            s.log.append("rmdir \(path)")
            if let e = failure("rmdir \(path)", in: s) { return e }
            guard s.dirs.contains(path) else { return ENOENT }
            if s.defaults.contains(path) { return EPERM }
            if s.mounts.contains(where: { $0.path == path }) { return EBUSY }
            let prefix = path + "/"
            let userChildren = s.dirs.filter { $0.hasPrefix(prefix) && !s.defaults.contains($0) }
            let defaultChildrenWithContent = s.dirs.filter { $0.hasPrefix(prefix) && s.defaults.contains($0) }
                .contains { d in s.dirs.contains { $0.hasPrefix(d + "/") && !s.defaults.contains($0) } || s.links.keys.contains { $0.hasPrefix(d + "/") } }
            if !userChildren.isEmpty || defaultChildrenWithContent || s.links.keys.contains(where: { $0.hasPrefix(prefix) }) {
                return ENOTEMPTY
            }
            s.dirs = s.dirs.filter { $0 != path && !$0.hasPrefix(prefix) }
            s.defaults = s.defaults.filter { $0 != path && !$0.hasPrefix(prefix) }
            s.files = s.files.filter { !$0.key.hasPrefix(prefix) }
            return nil
        }
    }

    func writeFile(_ path: String, _ bytes: [UInt8]) -> Int32? {
        state.withLock { s in
            let text = String(decoding: bytes, as: UTF8.self)
            s.log.append("write \(path)=\(text)")
            if let e = failure("write \(path)=\(text)", in: s) ?? failure("write \(path)", in: s) { return e }
            guard s.dirs.contains(Self.parent(path)) else { return ENOENT }
            s.files[path] = bytes
            return nil
        }
    }

    func readFile(_ path: String) -> [UInt8]? {
        state.withLock { $0.files[path] }
    }

    func listDirectory(_ path: String) -> [String]? {
        state.withLock { s in
            guard s.dirs.contains(path) else { return nil }
            let prefix = path == "/" ? "/" : path + "/"
            let all = Array(s.dirs) + Array(s.files.keys) + Array(s.links.keys)
            return Set(all.filter { $0.hasPrefix(prefix) && !$0.dropFirst(prefix.count).contains("/") && $0 != path }
                .map { String($0.dropFirst(prefix.count)) }).sorted()
        }
    }

    func makeSymlink(target: String, at path: String) -> Int32? {
        state.withLock { s in
            s.log.append("symlink \(path) -> \(target)")
            if let e = failure("symlink \(path)", in: s) { return e }
            guard s.dirs.contains(Self.parent(path)) else { return ENOENT }
            s.links[path] = target
            return nil
        }
    }

    func removeLink(_ path: String) -> Int32? {
        state.withLock { s in
            s.log.append("unlink \(path)")
            return s.links.removeValue(forKey: path) == nil ? ENOENT : nil
        }
    }

    func isSymlink(_ path: String) -> Bool { state.withLock { $0.links[path] != nil } }

    func exists(_ path: String) -> Bool {
        state.withLock { s in s.dirs.contains(path) || s.files[path] != nil || s.links[path] != nil }
    }

    func mountFunctionFS(source: String, at path: String) -> Int32? {
        state.withLock { s in
            s.log.append("mount \(source) \(path)")
            if let e = failure("mount \(path)", in: s) { return e }
            guard s.dirs.contains(path) else { return ENOENT }
            s.mounts.append((source, path))
            return nil
        }
    }

    func unmount(_ path: String) -> Int32? {
        state.withLock { s in
            s.log.append("umount \(path)")
            if let e = failure("umount \(path)", in: s) { return e }
            guard let k = s.mounts.firstIndex(where: { $0.path == path }) else { return EINVAL }
            s.mounts.remove(at: k)
            return nil
        }
    }

    func functionFSMounts() -> [(source: String, path: String)] { state.withLock { $0.mounts } }

    func openEndpointZero(_ path: String) -> Result<Int32, TransportErrno> {
        state.withLock { s -> Result<Int32, TransportErrno> in
            s.log.append("open \(path)")
            if let e = failure("open \(path)", in: s) { return .failure(TransportErrno(code: e)) }
            guard s.mounts.contains(where: { $0.path + "/ep0" == path }) else { return .failure(TransportErrno(code: ENOENT)) }
            var fds: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
                return .failure(TransportErrno(code: errno))
            }
            _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
            s.ep0 = fds[0]
            s.hostEnd = fds[1]
            return .success(fds[0])
        }
    }

    func writeBlob(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
        state.withLock { s in
            s.log.append("write ep0 \(bytes.count) bytes")
            if let e = failure("write ep0 \(bytes.count)", in: s) { return e }
            s.blobs.append(bytes)
            return nil
        }
    }

    func closeDescriptor(_ fd: Int32) {
        state.withLock { s in
            s.log.append("close ep0")
            s.closedEP0 = true
        }
        _ = Glibc.close(fd)
    }

    func endpointZero(_ fd: Int32) -> any EndpointZero { FakeEndpointZero(descriptor: fd) }
}

/// ep0 over a SOCK_SEQPACKET socket: each event is one 12-byte message from the test; a 1-byte 0xEE message makes
/// `readEvents` fail with EIDRM. Every answer goes back as a tagged message: "W" + data (write), "A" (read 0: an
/// acknowledge, or the stall of an IN request), "Z" (write 0: the stall of an OUT request), "R" + u16 count (a
/// data-stage read, answered by the test's next message).
struct FakeEndpointZero: EndpointZero {
    let descriptor: Int32

    func readEvents(_ buffer: inout [UInt8]) -> Int {
        let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if n < 0 { return -Int(errno) }
        if n == 1 && buffer[0] == 0xEE { return -Int(EIDRM) }
        return n
    }

    func perform(_ call: EP0Call, data: [UInt8], into buffer: inout [UInt8]) -> Int {
        switch call {
        case .write(let count):
            let message = (count == 0 ? [UInt8(ascii: "Z")] : [UInt8(ascii: "W")] + data.prefix(count))
            _ = message.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            return count == 0 ? -Int(EL2HLT) : count
        case .read(let count):
            if count == 0 {
                let message = [UInt8(ascii: "A")]
                _ = message.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                return 0
            }
            let message = [UInt8(ascii: "R"), UInt8(count >> 8), UInt8(count & 0xFF)]
            _ = message.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if buffer.count < count { buffer = [UInt8](repeating: 0, count: count) }
            let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, count, 0) }
            return n < 0 ? -Int(errno) : n
        }
    }
}
