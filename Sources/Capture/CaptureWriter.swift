import Glibc
import Support
import Synchronization

/// A pcapng capture written as it goes (docs/capture.md §1): the section header when it is created, an interface
/// description when a link opens, an enhanced packet per frame. Every block is encoded by the caller (pure, cheap) and
/// written with one `write(2)` on a `SerialLane`, off the cooperative pool, in the order the frames were recorded; a
/// killed process leaves every block that was written whole.
///
/// A write that fails (a full disk: `ENOSPC`, `EIO`, a closed pipe) ends the capture: `warn` is called once with one
/// line, later frames are dropped, and whatever is being captured goes on. No lock is held while writing or warning.
public final class CaptureWriter: Sendable {
    /// The path (or what the descriptor is), for messages.
    public let path: String
    private let lane: SerialLane
    private let warn: @Sendable (String) -> Void
    private struct State {
        var fd: Int32
        var interfaces = 0
        var failed = false
        var closed = false
        var blocks = 0
    }
    private let state: Mutex<State>

    /// A writer on `fd` (a file, a pipe, `/dev/full` in tests): writes the section header at once (on the lane).
    /// The writer closes `fd` when it is closed.
    public init(fileDescriptor fd: Int32, path: String, application: String = "tuneup", warn: @escaping @Sendable (String) -> Void) {
        self.path = path
        self.lane = SerialLane("capture")
        self.warn = warn
        self.state = Mutex(State(fd: fd))
        enqueue(PcapNG.sectionHeader(application: application))
    }

    /// Creates the capture file at `path` by docs/cli.md's output rule (`SafeOutput`): a symbolic link, FIFO, device or
    /// directory is refused, and so is an existing file (a capture never replaces one). Throws `OutputFileError`
    /// (exit 74) with one line.
    public static func create(path: String, application: String, warn: @escaping @Sendable (String) -> Void) async throws(OutputFileError) -> CaptureWriter {
        let fd = try await Blocking.perform("capture-create", unavailable: { OutputFileError(.writeFailed, "cannot create \(path): \($0.message)") }) { () throws(OutputFileError) -> Int32 in
            do throws(OutputFileError) {
                _ = try SafeOutput.check(path, existing: .refuse)
                let staged = try SafeOutput.stage(path, replacing: nil)
                do throws(OutputFileError) {
                    try SafeOutput.commit(staged, existing: .refuse)
                } catch {
                    SafeOutput.discard(staged)
                    throw error
                }
                return staged.fd
            } catch {
                guard error.code == .exists else { throw error }
                throw OutputFileError(.exists, "\(path) exists: a capture never replaces a file (give another name, or remove it)")
            }
        }
        return CaptureWriter(fileDescriptor: fd, path: path, application: application, warn: warn)
    }

    /// Describes a new link: its interface id, for `record`. Written before any packet of it.
    public func addInterface(linkType: CaptureLinkType, name: String, role: CaptureRole) -> Int {
        let id = state.withLock { s in
            defer { s.interfaces += 1 }
            return s.interfaces
        }
        enqueue(PcapNG.interfaceDescription(linkType: linkType.rawValue, name: name, description: "\(linkType.carries); \(role.rawValue) side"))
        return id
    }

    /// Records one packet of `interface`, timestamped now. Does not block: the block is written on the lane.
    public func record<C: Collection>(interface: Int, direction: CaptureDirection, _ data: C) where C.Element == UInt8 {
        guard state.withLock({ !$0.failed && !$0.closed }) else { return }
        enqueue(PcapNG.enhancedPacket(interface: interface, timestamp: Self.now(), direction: direction, data: data))
    }

    /// Whether a write failed (the capture ended).
    public var failed: Bool { state.withLock { $0.failed } }

    /// Waits until every block recorded so far is written (or dropped after a failure).
    public func flush() async { await lane.flush() }

    /// Writes what is queued and closes the descriptor; later records are dropped. Idempotent.
    public func close() async {
        await lane.flush()
        _ = try? await lane.perform(unavailable: { $0 }) { () throws(SupportError) in
            let fd = self.state.withLock { s -> Int32 in
                defer { s.closed = true; s.fd = -1 }
                return s.closed ? -1 : s.fd
            }
            if fd >= 0 { _ = Glibc.close(fd) }
        }
    }

    /// Nanoseconds since the epoch (CLOCK_REALTIME: a capture's times are wall-clock times).
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    private func enqueue(_ block: [UInt8]) {
        do {
            try lane.submit { [self] in write(block) }
        } catch {
            fail("no thread to write it (\(error.message))")
        }
    }

    /// On the lane: one write(2) of the whole block (continued only after a short write).
    private func write(_ block: [UInt8]) {
        let fd = state.withLock { s in s.failed || s.closed ? -1 : s.fd }
        guard fd >= 0 else { return }
        var done = 0
        while done < block.count {
            let n = block.withUnsafeBytes { raw in Glibc.write(fd, raw.baseAddress! + done, raw.count - done) }
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                fail(String(cString: strerror(code)))
                return
            }
            done += n
        }
        state.withLock { $0.blocks += 1 }
    }

    private func fail(_ reason: String) {
        let first = state.withLock { s -> Bool in
            defer { s.failed = true }
            return !s.failed
        }
        if first { warn("capture \(path) ended: \(reason); the command goes on without it") }
    }
}
