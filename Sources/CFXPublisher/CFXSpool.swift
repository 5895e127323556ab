import Foundation
import Glibc
import Support
import Synchronization

/// One message in the spool: its file name (`SEQUENCE-UNIQUEID.json`: the order it was made in), its UniqueID and
/// its JSON.
public struct SpooledMessage: Sendable, Hashable {
    public var name: String
    public var uniqueID: String
    public var body: [UInt8]
}

/// The durable local spool of CFX messages (the outbox's idea): a directory with one file per message, written and
/// flushed to disk (file and directory fsync) before the message is offered to the broker, and removed only when
/// the broker accepted it. A station that is killed, or a broker that is away, loses nothing: what is in the
/// directory is sent at the next start. Every file operation runs on one `SerialLane`, never on the cooperative
/// pool.
public final class CFXSpool: Sendable {
    public let directory: String
    private let lane: SerialLane
    private let sequence: Mutex<UInt64>

    private init(directory: String, next: UInt64) {
        self.directory = directory
        lane = SerialLane("cfx-spool")
        sequence = Mutex(next)
    }

    /// Opens (creating) the spool directory and returns it with the messages it holds, oldest first.
    public static func open(directory: String) async throws(CFXError) -> (spool: CFXSpool, waiting: [SpooledMessage]) {
        let found = try await Blocking.perform("cfx spool open", unavailable: { CFXError(.spool, "cfx: \($0.message)") }) { () throws(CFXError) -> [SpooledMessage] in
            try Self.makeDirectory(directory)
            return try Self.read(directory)
        }
        let next = (found.compactMap { UInt64($0.name.prefix { $0 != "-" }) }.max() ?? 0) + 1
        return (CFXSpool(directory: directory, next: next), found)
    }

    /// Writes messages to the spool (each file flushed, then the directory) and returns them as spooled. A
    /// message whose UniqueID the spool holds already replaces nothing and is not written twice.
    public func write(_ messages: [(uniqueID: String, body: [UInt8])]) async throws(CFXError) -> [SpooledMessage] {
        let first = sequence.withLock { next -> UInt64 in
            defer { next += UInt64(messages.count) }
            return next
        }
        let spooled = messages.enumerated().map { index, message in
            SpooledMessage(name: String(format: "%012llu", first + UInt64(index)) + "-\(message.uniqueID).json",
                           uniqueID: message.uniqueID, body: message.body)
        }
        let directory = self.directory
        return try await lane.perform(unavailable: { CFXError(.spool, "cfx: \($0.message)") }) { () throws(CFXError) -> [SpooledMessage] in
            let held = Set(((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).compactMap(Self.uniqueID(ofFile:)))
            var written: [SpooledMessage] = []
            for message in spooled where !held.contains(message.uniqueID) {
                try Self.writeFile(directory, message)
                written.append(message)
            }
            try Self.syncDirectory(directory)
            return written
        }
    }

    /// Removes an accepted message (queued on the lane; the caller does not wait). The directory is not flushed
    /// for each removal: after a power cut a message the broker took may be sent again (same UniqueID).
    public func remove(_ name: String) {
        let path = directory + "/" + name
        try? lane.submit { _ = unlink(path) }
    }

    /// Waits until every queued removal has been done.
    public func flush() async { await lane.flush() }

    /// The messages in the spool now, oldest first (for tests and reports).
    public func contents() async throws(CFXError) -> [SpooledMessage] {
        let directory = self.directory
        return try await lane.perform(unavailable: { CFXError(.spool, "cfx: \($0.message)") }) { () throws(CFXError) in try Self.read(directory) }
    }

    // MARK: Files (blocking: on the lane)

    static func uniqueID(ofFile name: String) -> String? {
        guard name.hasSuffix(".json"), !name.hasPrefix("."), let dash = name.firstIndex(of: "-") else { return nil }
        return String(name[name.index(after: dash)..<name.index(name.endIndex, offsetBy: -5)])
    }

    static func makeDirectory(_ directory: String) throws(CFXError) {
        var info = stat()
        if stat(directory, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw CFXError(.spool, "cfx: the spool \(directory) is not a directory") }
            guard access(directory, W_OK | X_OK) == 0 else { throw CFXError(.spool, "cfx: cannot write the spool \(directory): \(text(errno))") }
            return
        }
        guard mkdir(directory, 0o755) == 0 || errno == EEXIST else {
            throw CFXError(.spool, "cfx: cannot create the spool \(directory): \(text(errno))")
        }
    }

    static func read(_ directory: String) throws(CFXError) -> [SpooledMessage] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw CFXError(.spool, "cfx: cannot read the spool \(directory)")
        }
        var found: [SpooledMessage] = []
        for name in names.sorted() {
            let path = directory + "/" + name
            if name.hasPrefix(".tmp-") {
                // A write a killed station left half done: its message was never offered (written again on resend).
                unlink(path)
                continue
            }
            guard let uniqueID = uniqueID(ofFile: name) else { continue }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CFXError(.spool, "cfx: cannot read \(path)")
            }
            found.append(SpooledMessage(name: name, uniqueID: uniqueID, body: Array(data)))
        }
        return found
    }

    static func writeFile(_ directory: String, _ message: SpooledMessage) throws(CFXError) {
        let temp = directory + "/.tmp-" + message.name
        let path = directory + "/" + message.name
        let fd = Glibc.open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CFXError(.spool, "cfx: cannot write \(temp): \(text(errno))") }
        var ok = true
        var code: Int32 = 0
        message.body.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    ok = false
                    code = errno
                    return
                }
                offset += n
            }
        }
        if ok, fsync(fd) != 0 { ok = false; code = errno }
        close(fd)
        guard ok else {
            unlink(temp)
            throw CFXError(.spool, "cfx: cannot write \(path): \(text(code))")
        }
        guard rename(temp, path) == 0 else {
            let code = errno
            unlink(temp)
            throw CFXError(.spool, "cfx: cannot write \(path): \(text(code))")
        }
    }

    static func syncDirectory(_ directory: String) throws(CFXError) {
        let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw CFXError(.spool, "cfx: cannot open the spool \(directory): \(text(errno))") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw CFXError(.spool, "cfx: cannot flush the spool \(directory): \(text(errno))") }
    }

    static func text(_ code: Int32) -> String { String(cString: strerror(code)) }
}
