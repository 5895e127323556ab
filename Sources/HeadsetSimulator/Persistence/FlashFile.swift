import Glibc
import LightX
import Simulator

/// What the in-process simulator keeps of a device's RAM between processes, with the end of its readiness delay
/// as wall-clock time (so the delay keeps running while no process holds the device).
struct StoredRunningState: Sendable, Hashable {
    var image: RunningImage
    var authenticated: Bool
    var verified: [FlashRegion: Bootloader.Verification]
    /// CLOCK_REALTIME nanoseconds when the firmware becomes ready; 0 when it was ready.
    var readyAtWallClock: Int64

    /// CLOCK_REALTIME in nanoseconds.
    static func wallClockNow() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }
}

/// The flash container next to the JSON state file (`STATE.flash`): every device's 2 MiB flash at a fixed offset, so
/// each flash operation is persisted with one `pwrite` of the bytes it touched. Blocking helpers: callers run them on
/// the state store's queue. Internal.
///
/// Layout (little-endian):
/// - header, 8192 bytes: magic "TUNEFLSH", u32 format 1, u32 flash size (2 MiB), u32 device slots (64), u32 header
///   size (8192), u32 CRC-32/JAMCRC of the preceding 24 bytes; then at 64 + 64·k device k's descriptor:
///   - +0 u32 "FLOK" (0x4B4F4C46) once device k's flash has been written in full (else the device starts from the
///     factory flash);
///   - +8..<44 the running state of a device that stayed on (in-process simulator; cleared when read): u32 "RUN1",
///     u8 image (0 bootloader, 1 application), u8 authenticated, u8 verified (bit 0 application, bit 1 resource),
///     u8 0, u32 application sectors, u32 CRC, u32 resource sectors, u32 CRC, i64 ready-at (CLOCK_REALTIME ns,
///     0 = ready), u32 CRC-32/JAMCRC of the preceding 32 bytes.
/// - device k's flash at 8192 + k · 2 MiB.
///
/// Crash safety: a flash operation is one `pwrite` issued before the device replies, so a killed simulator keeps
/// every acknowledged operation (the page cache survives the process). A device's first full write is made durable
/// (fdatasync) before its "FLOK" marker is written.
enum FlashFile {
    static let magic = Array("TUNEFLSH".utf8)
    static let formatVersion: UInt32 = 1
    static let headerSize = 8192
    static let slots = 64
    static let descriptorBase = 64
    static let descriptorSize = 64
    static let flashValidMagic: UInt32 = 0x4B4F_4C46
    static let runningMagic: UInt32 = 0x314E_5552

    struct Loaded {
        var fd: Int32
        var flash: [Int: [UInt8]]
        var running: [Int: StoredRunningState]
    }

    static func flashOffset(ofDevice k: Int) -> Int { headerSize + k * FlashMap.size }
    static func descriptorOffset(ofDevice k: Int) -> Int { descriptorBase + k * descriptorSize }

    /// Opens (creating) the container and loads every stored device.
    static func open(_ path: String) throws(SimulatorError) -> Loaded {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileIO.error("open the simulator flash file", path, errno) }
        do throws(SimulatorError) {
            var st = stat()
            guard fstat(fd, &st) == 0 else { throw FileIO.error("inspect the simulator flash file", path, errno) }
            let size = Int(st.st_size)
            if size == 0 {
                try writeAll(fd, path, header(), at: 0)
                return Loaded(fd: fd, flash: [:], running: [:])
            }
            guard size >= headerSize else { throw corrupt(path, "it is \(size) bytes, shorter than its \(headerSize)-byte header") }
            let head = try readExactly(fd, path, count: headerSize, at: 0)
            guard Array(head[0..<24]) == Array(header()[0..<24]), LE32.get(head, 24) == CRC32JAMCRC.checksum(head[0..<24]) else {
                throw corrupt(path, "its header is not a Tuneup flash container of format \(formatVersion) for 2 MiB devices")
            }
            var loaded = Loaded(fd: fd, flash: [:], running: [:])
            for k in 0..<slots {
                let d = descriptorOffset(ofDevice: k)
                if LE32.get(head, d) == flashValidMagic {
                    guard size >= flashOffset(ofDevice: k) + FlashMap.size else {
                        throw corrupt(path, "device \(k)'s flash is cut off (the file is \(size) bytes)")
                    }
                    loaded.flash[k] = try readExactly(fd, path, count: FlashMap.size, at: flashOffset(ofDevice: k))
                }
                if let running = decodeRunning(head[(d + 8)..<(d + 44)]) { loaded.running[k] = running }
            }
            return loaded
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
    }

    /// Writes a device's whole flash, makes it durable, then marks it valid.
    static func initialize(_ fd: Int32, _ path: String, device k: Int, contents: [UInt8]) throws(SimulatorError) {
        try writeAll(fd, path, contents, at: flashOffset(ofDevice: k))
        guard fdatasync(fd) == 0 else { throw FileIO.error("flush the simulator flash file", path, errno) }
        var w = ArgumentWriter()
        w.u32(flashValidMagic)
        try writeAll(fd, path, w.bytes, at: descriptorOffset(ofDevice: k))
    }

    /// Persists `bytes` at absolute flash address `address` of device `k`.
    static func write(_ fd: Int32, _ path: String, device k: Int, address: Int, bytes: [UInt8]) throws(SimulatorError) {
        try writeAll(fd, path, bytes, at: flashOffset(ofDevice: k) + address)
    }

    /// Stores (or, with nil, clears) device `k`'s running state.
    static func writeRunning(_ fd: Int32, _ path: String, device k: Int, _ state: StoredRunningState?) throws(SimulatorError) {
        try writeAll(fd, path, state.map(encodeRunning) ?? [UInt8](repeating: 0, count: 36), at: descriptorOffset(ofDevice: k) + 8)
    }

    // MARK: - Encoding

    static func header() -> [UInt8] {
        var w = ArgumentWriter()
        w.bytes(magic)
        w.u32(formatVersion)
        w.u32(UInt32(FlashMap.size))
        w.u32(UInt32(slots))
        w.u32(UInt32(headerSize))
        var bytes = w.bytes
        var c = ArgumentWriter()
        c.u32(CRC32JAMCRC.checksum(bytes))
        bytes += c.bytes
        bytes += [UInt8](repeating: 0, count: headerSize - bytes.count)
        return bytes
    }

    static func encodeRunning(_ s: StoredRunningState) -> [UInt8] {
        var w = ArgumentWriter()
        w.u32(runningMagic)
        let app = s.verified[.application]
        let res = s.verified[.resource]
        w.bytes([s.image == .application ? 1 : 0, s.authenticated ? 1 : 0, (app == nil ? 0 : 1) | (res == nil ? 0 : 2), 0])
        w.u32(app?.sectors ?? 0)
        w.u32(app?.crc ?? 0)
        w.u32(res?.sectors ?? 0)
        w.u32(res?.crc ?? 0)
        w.u32(UInt32(truncatingIfNeeded: UInt64(bitPattern: s.readyAtWallClock)))
        w.u32(UInt32(truncatingIfNeeded: UInt64(bitPattern: s.readyAtWallClock) >> 32))
        var bytes = w.bytes
        var c = ArgumentWriter()
        c.u32(CRC32JAMCRC.checksum(bytes))
        bytes += c.bytes
        return bytes
    }

    static func decodeRunning(_ bytes: ArraySlice<UInt8>) -> StoredRunningState? {
        let b = Array(bytes)
        guard b.count >= 36, LE32.get(b, 0) == runningMagic, LE32.get(b, 32) == CRC32JAMCRC.checksum(b[0..<32]),
              b[4] <= 1 else { return nil }
        var verified: [FlashRegion: Bootloader.Verification] = [:]
        if b[6] & 1 != 0 { verified[.application] = Bootloader.Verification(sectors: LE32.get(b, 8), crc: LE32.get(b, 12)) }
        if b[6] & 2 != 0 { verified[.resource] = Bootloader.Verification(sectors: LE32.get(b, 16), crc: LE32.get(b, 20)) }
        let ready = Int64(bitPattern: UInt64(LE32.get(b, 24)) | UInt64(LE32.get(b, 28)) << 32)
        return StoredRunningState(image: b[4] == 1 ? .application : .bootloader, authenticated: b[5] != 0, verified: verified,
                                  readyAtWallClock: ready)
    }

    // MARK: - I/O

    static func writeAll(_ fd: Int32, _ path: String, _ bytes: [UInt8], at offset: Int) throws(SimulatorError) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, $0.count - done, off_t(offset + done)) }
            if n > 0 {
                done += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                throw FileIO.error("write the simulator flash file", path, n < 0 ? errno : EIO)
            }
        }
    }

    static func readExactly(_ fd: Int32, _ path: String, count: Int, at offset: Int) throws(SimulatorError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n > 0 {
                done += n
            } else if n < 0 && errno == EINTR {
                continue
            } else if n == 0 {
                throw corrupt(path, "it ends at byte \(offset + done), inside data it should hold")
            } else {
                throw FileIO.error("read the simulator flash file", path, errno)
            }
        }
        return out
    }

    static func corrupt(_ path: String, _ why: String) -> SimulatorError {
        SimulatorError(.corruptState, "simulator flash file \(path) is corrupt: \(why) (the file was left unchanged; "
            + "delete it to start from the factory flash)")
    }
}

/// Little-endian u32 reads from byte arrays (bounds-checked: 0 when out of range).
enum LE32 {
    static func get(_ b: [UInt8], _ at: Int) -> UInt32 {
        guard at >= 0, at + 4 <= b.count else { return 0 }
        return UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
    }
}
