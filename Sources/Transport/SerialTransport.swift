import Glibc
import Support
import Logging

/// Serial lines: real ttys (`/dev/ttyUSB0`, `/dev/ttyACM0`), Bluetooth RFCOMM ttys (`/dev/rfcomm0`), pty slaves (the
/// simulator's `PseudoTerminal`), and — for tests and tooling — FIFOs and other character devices.
public enum SerialTransport {
    /// Opens `path` as a byte-stream `Transport` whose `peerDescription` is `serial:PATH`.
    ///
    /// The device is opened `O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC` on a dedicated thread (opening some USB
    /// serial drivers can take a while). If it is a tty it is put in raw 8-bit mode (`cfmakeraw`, `CLOCAL | CREAD`,
    /// no hardware or software flow control), `baudRate` is applied when non-nil, and stale input/output is flushed.
    /// `VMIN` is 1 and `VTIME` 0: the descriptor is non-blocking, so reads never wait anyway, and with `VMIN = 0` Linux
    /// makes a read with no data pending return 0 — indistinguishable from end of stream. An advisory `flock` keeps two tuneup processes from sharing one tty.
    /// Non-tty character devices, FIFOs and sockets are used as they are; regular files and directories are refused.
    ///
    /// - Throws: `TransportError` — `.notFound` (no such path or device), `.permissionDenied` (the message suggests the
    ///   `dialout` group), `.busy` (held by another process), `.unsupported` (unsupported baud rate, not a device),
    ///   `.io` otherwise — or `CancellationError`.
    public static func open(path: String, baudRate: Int? = 115_200, logger: Logger? = nil) async throws -> any Transport {
        let display = "serial:\(path)"
        var speed: speed_t?
        if let baudRate {
            guard let s = Self.speed(for: baudRate) else {
                let known = Self.speeds.map { String($0.0) }.joined(separator: ", ")
                throw TransportError(.unsupported, "cannot open \(display): baud rate \(baudRate) is not supported (use one of \(known))")
            }
            speed = s
        }
        let outcome = try await Blocking.run(
            "tuneup-open",
            discard: { (result: Result<Int32, TransportError>) in
                if case .success(let fd) = result { POSIX.close(fd) }
            }
        ) { [speed] in
            openAndConfigure(path: path, speed: speed)
        }
        let fd = try outcome.get()
        return try FileDescriptorTransport(adopting: fd, peerDescription: display, logger: logger)
    }

    /// Blocking open + configuration. Call only from a dedicated thread.
    static func openAndConfigure(path: String, speed: speed_t?) -> Result<Int32, TransportError> {
        let display = "serial:\(path)"
        let fd = Glibc.open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failure(openError(errno, path: path)) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let e = errno
            POSIX.close(fd)
            return .failure(TransportError(.io, "cannot open \(display): \(POSIX.describe(e))", errno: e))
        }
        let kind = info.st_mode & S_IFMT
        guard kind == S_IFCHR || kind == S_IFIFO || kind == S_IFSOCK else {
            POSIX.close(fd)
            let what = kind == S_IFREG ? "a regular file" : kind == S_IFDIR ? "a directory" : "not a device"
            return .failure(TransportError(.unsupported, "cannot open \(display): it is \(what), not a serial device"))
        }
        guard isatty(fd) == 1 else { return .success(fd) }

        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            if e == EWOULDBLOCK {
                POSIX.close(fd)
                return .failure(TransportError(.busy, "cannot open \(display): it is in use by another tuneup process", errno: e))
            }
        }
        var settings = termios()
        guard tcgetattr(fd, &settings) == 0 else {
            let e = errno
            POSIX.close(fd)
            return .failure(TransportError(.io, "cannot configure \(display): \(POSIX.describe(e))", errno: e))
        }
        cfmakeraw(&settings)
        settings.c_cflag |= tcflag_t(CLOCAL | CREAD)
        settings.c_cflag &= ~tcflag_t(CRTSCTS)
        settings.c_iflag &= ~tcflag_t(IXON | IXOFF | IXANY)
        withUnsafeMutableBytes(of: &settings.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        if let speed {
            cfsetispeed(&settings, speed)
            cfsetospeed(&settings, speed)
        }
        guard tcsetattr(fd, TCSANOW, &settings) == 0 else {
            let e = errno
            POSIX.close(fd)
            return .failure(TransportError(.io, "cannot configure \(display): \(POSIX.describe(e))", errno: e))
        }
        _ = tcflush(fd, TCIOFLUSH)
        return .success(fd)
    }

    /// Maps an `open(2)` errno to a clear error naming the path.
    static func openError(_ e: Int32, path: String) -> TransportError {
        let display = "serial:\(path)"
        switch e {
        case ENOENT, ENOTDIR:
            return TransportError(.notFound, "cannot open \(display): no such device or file", errno: e)
        case ENXIO, ENODEV:
            return TransportError(.notFound, "cannot open \(display): the device is not present (unplugged or powered off?)", errno: e)
        case EACCES, EPERM:
            return TransportError(.permissionDenied, "cannot open \(display): permission denied (add your user to the 'dialout' group: sudo usermod -aG dialout $USER, then log in again)", errno: e)
        case EBUSY:
            return TransportError(.busy, "cannot open \(display): the device is busy (another program has it open)", errno: e)
        case EISDIR:
            return TransportError(.unsupported, "cannot open \(display): it is a directory, not a serial device", errno: e)
        default:
            return TransportError(.io, "cannot open \(display): \(POSIX.describe(e))", errno: e)
        }
    }

    /// Standard rates understood by `open(path:baudRate:)`.
    static let speeds: [(Int, speed_t)] = [
        (1200, speed_t(B1200)), (2400, speed_t(B2400)), (4800, speed_t(B4800)), (9600, speed_t(B9600)),
        (19200, speed_t(B19200)), (38400, speed_t(B38400)), (57600, speed_t(B57600)), (115_200, speed_t(B115200)),
        (230_400, speed_t(B230400)), (460_800, speed_t(B460800)), (500_000, speed_t(B500000)),
        (576_000, speed_t(B576000)), (921_600, speed_t(B921600)), (1_000_000, speed_t(B1000000)),
        (1_500_000, speed_t(B1500000)), (2_000_000, speed_t(B2000000)), (3_000_000, speed_t(B3000000)),
        (4_000_000, speed_t(B4000000)),
    ]

    static func speed(for baud: Int) -> speed_t? {
        speeds.first { $0.0 == baud }?.1
    }
}
