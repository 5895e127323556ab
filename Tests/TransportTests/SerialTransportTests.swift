import Glibc
import Testing
@testable import Transport
import TestSupport

@Suite struct SerialTransportTests {
    /// Every byte value, including the ones a cooked tty would eat or translate (LF, CR, ^C, ^Q, ^S, ^D, ^Z, DEL).
    static let allBytes: [UInt8] = Array(0...255) + [0x0A, 0x0D, 0x03, 0x11, 0x13, 0x04, 0x1A, 0x7F, 0x0D, 0x0A]

    @Test func binaryDataSurvivesAPtyBothWays() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            #expect(pty.slavePath.hasPrefix("/dev/pts/"))
            async let accepted = pty.accept()
            let client = try await SerialTransport.open(path: pty.slavePath)
            let server = try await accepted
            #expect(client.peerDescription == "serial:\(pty.slavePath)")
            #expect(client.framing == .byteStream)
            // Client → server.
            let payload = Self.allBytes + pattern(10_000, seed: 3)
            try await client.send(payload)
            #expect(try await receiveExactly(payload.count, from: server) == payload)
            // Server → client.
            let reply = Self.allBytes.reversed() + pattern(10_000, seed: 4)
            try await server.send(reply)
            #expect(try await receiveExactly(reply.count, from: client) == reply)
            // Nothing echoed back to the server: an echo of the reply would reach the server before this marker.
            try await client.send([0xA5])
            #expect(try await receiveExactly(1, from: server) == [0xA5])
            await client.close()
            await server.close()
        }
    }

    @Test func anIdleClientWaitsForData() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            async let accepted = pty.accept()
            let client = try await SerialTransport.open(path: pty.slavePath)
            let server = try await accepted
            // Nothing pending: the receive must wait (not report end of stream).
            let fd = try #require(client as? FileDescriptorTransport)
            let pending = try await receiveThatWaits(on: client) { fd.hasPendingReceive }
            try await server.send([0x42])
            #expect(try await pending.value == [0x42])
            try await server.send([0x43])
            #expect(try await client.receive() == [0x43])
            await client.close()
            await server.close()
        }
    }

    @Test func aTtyConfiguredWithVMINZeroStillWaitsForData() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            async let accepted = pty.accept()
            let fd = open(pty.slavePath, O_RDWR | O_NOCTTY | O_CLOEXEC)
            #expect(fd >= 0)
            var settings = termios()
            #expect(tcgetattr(fd, &settings) == 0)
            withUnsafeMutableBytes(of: &settings.c_cc) { cc in
                cc[Int(VMIN)] = 0
                cc[Int(VTIME)] = 0
            }
            #expect(tcsetattr(fd, TCSANOW, &settings) == 0)
            let client = try FileDescriptorTransport(adopting: fd, peerDescription: "raw")
            let server = try await accepted
            let pending = try await receiveThatWaits(on: client) { client.hasPendingReceive }
            try await server.send([7])
            #expect(try await pending.value == [7])
            // A real hang-up is still the end: closing the pty hangs the slave up.
            pty.close()
            await expectTransportError(.closed) { _ = try await client.receive() }
            await client.close()
        }
    }

    @Test func openMissingPathIsNotFound() async throws {
        let error = await expectTransportError(.notFound) {
            _ = try await SerialTransport.open(path: "/dev/ttyNoSuchDevice42")
        }
        #expect(error?.message == "cannot open serial:/dev/ttyNoSuchDevice42: no such device or file")
    }
}

@Suite struct SerialTransportErrorTests {
    @Test func secondOpenOfTheSameTtyIsBusy() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            let first = try await SerialTransport.open(path: pty.slavePath)
            let error = await expectTransportError(.busy) { _ = try await SerialTransport.open(path: pty.slavePath) }
            #expect(error?.message == "cannot open serial:\(pty.slavePath): it is in use by another tuneup process")
            await first.close()
            // Released on close.
            let again = try await SerialTransport.open(path: pty.slavePath)
            await again.close()
        }
    }

    @Test func regularFilesAndDirectoriesAreRefused() async throws {
        let path = try TemporaryDirectory.make("tuneup-serial-test") + "/file"
        let fd = creat(path, 0o600)
        #expect(fd >= 0)
        close(fd)
        defer { unlink(path) }
        let file = await expectTransportError(.unsupported) { _ = try await SerialTransport.open(path: path) }
        #expect(file?.message == "cannot open serial:\(path): it is a regular file, not a serial device")
        let directory = await expectTransportError(.unsupported) { _ = try await SerialTransport.open(path: "/tmp") }
        #expect(directory?.message == "cannot open serial:/tmp: it is a directory, not a serial device")
    }

    @Test func fifosAreAccepted() async throws {
        try await withTimeLimit {
            let path = try TemporaryDirectory.make("tuneup-fifo-test") + "/fifo"
            unlink(path)
            #expect(mkfifo(path, 0o600) == 0)
            defer { unlink(path) }
            // Opened read-write, a FIFO loops back what is written.
            let loop = try await SerialTransport.open(path: path)
            #expect(loop.peerDescription == "serial:\(path)")
            try await loop.send([1, 2, 3, 0x0A])
            #expect(try await receiveExactly(4, from: loop) == [1, 2, 3, 0x0A])
            await loop.close()
        }
    }

    @Test func baudRateIsAppliedToTtys() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            let port = try await SerialTransport.open(path: pty.slavePath, baudRate: 9600)
            guard let fd = (port as? FileDescriptorTransport)?.descriptor else {
                Issue.record("expected a FileDescriptorTransport")
                return
            }
            var settings = termios()
            #expect(tcgetattr(fd, &settings) == 0)
            #expect(cfgetospeed(&settings) == speed_t(B9600))
            #expect(settings.c_lflag & tcflag_t(ECHO | ICANON | ISIG) == 0)
            #expect(settings.c_iflag & tcflag_t(IXON | ICRNL) == 0)
            #expect(settings.c_cflag & tcflag_t(CLOCAL | CREAD) == tcflag_t(CLOCAL | CREAD))
            await port.close()
        }
    }

    @Test func unsupportedBaudRateIsRejected() async throws {
        let error = await expectTransportError(.unsupported) {
            _ = try await SerialTransport.open(path: "/dev/null", baudRate: 12_345)
        }
        #expect(error?.message.hasPrefix("cannot open serial:/dev/null: baud rate 12345 is not supported (use one of 1200,") == true)
    }

    @Test func openErrorsNameThePathAndExplain() {
        let denied = SerialTransport.openError(EACCES, path: "/dev/ttyUSB0")
        #expect(denied.code == .permissionDenied)
        #expect(denied.message.hasPrefix("cannot open serial:/dev/ttyUSB0: permission denied"))
        #expect(denied.message.contains("'dialout' group"))
        #expect(denied.errno == EACCES)
        #expect(SerialTransport.openError(EPERM, path: "/x").code == .permissionDenied)
        let busy = SerialTransport.openError(EBUSY, path: "/dev/ttyACM0")
        #expect(busy.code == .busy)
        #expect(busy.message == "cannot open serial:/dev/ttyACM0: the device is busy (another program has it open)")
        #expect(SerialTransport.openError(ENXIO, path: "/dev/rfcomm0").code == .notFound)
        #expect(SerialTransport.openError(ENOENT, path: "/nope").code == .notFound)
        let other = SerialTransport.openError(EMFILE, path: "/dev/ttyS0")
        #expect(other.code == .io)
        #expect(other.message == "cannot open serial:/dev/ttyS0: too many open files")
    }

    @Test func nonTtyCharacterDevicesOpen() async throws {
        try await withTimeLimit {
            // /dev/null: writes vanish, reads report end of stream.
            let null = try await SerialTransport.open(path: "/dev/null")
            try await null.send([1, 2, 3])
            await expectTransportError(.closed) { _ = try await null.receive() }
            await null.close()
        }
    }
}
