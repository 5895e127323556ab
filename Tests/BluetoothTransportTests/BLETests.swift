import Glibc
import Synchronization
import Testing
import TestSupport
import Transport
@testable import BluetoothTransport

private func bytes(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// BLE addresses, advertising data and advertising reports: pure, byte-exact.
@Suite struct BLEValueTests {
    @Test func addresses() {
        #expect(BLEAddress(parsing: "00:AA:01:00:00:00")?.description == "ble:00:AA:01:00:00:00")
        #expect(BLEAddress(parsing: "c0:ff:ee:00:00:01:random")?.description == "ble:C0:FF:EE:00:00:01:random")
        #expect(BLEAddress(parsing: "00:AA:01:00:00:00:public")?.isRandom == false)
        for bad in ["", "00:AA:01:00:00", "00:AA:01:00:00:00:5", "00:AA:01:00:00:0G", "00:AA:01:00:00:00:random:1"] {
            #expect(BLEAddress(parsing: bad) == nil, "\(bad)")
        }
    }

    /// Flags (LE general discoverable, no BR/EDR), 16-bit service 0xFDD2, complete name.
    @Test func advertisingData() {
        let data = AdvertisingData.encode(.init(name: "wearable 1", services16: [0xFDD2]))
        #expect(data == bytes("02 01 06 03 03 d2 fd 0b 09 77 65 61 72 61 62 6c 65 20 31"))
        #expect(AdvertisingData.decode(data) == .init(name: "wearable 1", services16: [0xFDD2]))
        // A long name is cut to fit 31 bytes and marked shortened (0x08).
        let long = AdvertisingData.encode(.init(name: String(repeating: "x", count: 40), services16: [0xFDD2]))
        #expect(long.count == 31 && long[8] == 0x08)
        // A structure running past the end is not read.
        #expect(AdvertisingData.decode(bytes("03 03 d2 fd 05 09 61")) == .init(services16: [0xFDD2]))
    }

    /// An LE Meta event (0x3E) with one advertising report (subevent 0x02), as btvirt's hci0 sends it.
    @Test func advertisingReport() {
        let event = bytes("02 01 00 00 00 00 00 01 aa 00 0d 02 01 06 03 03 d2 fd 05 09 77 65 61 72 c5")
        let reports = BLEAdvertisement.reports(inLEMeta: event)
        #expect(reports.count == 1)
        #expect(reports.first?.address.description == "ble:00:AA:01:00:00:00")
        #expect(reports.first?.name == "wear")
        #expect(reports.first?.services16 == [0xFDD2])
        #expect(reports.first?.rssi == -59)
        #expect(BLEAdvertisement.reports(inLEMeta: Array(event.dropLast(3))).isEmpty)
        #expect(BLEAdvertisement.reports(inLEMeta: bytes("01 01")).isEmpty)
    }

    /// A management Device Found event (0x0012): address, type (2: LE random), RSSI, flags, data length, data.
    @Test func managementDeviceFound() {
        let event = bytes("00 00 00 01 aa 00 02 c5 00 00 00 00 0d 00 02 01 06 03 03 d2 fd 05 09 77 65 61 72")
        let found = ManagementDiscovery.deviceFound(event[...])
        #expect(found?.address.description == "ble:00:AA:01:00:00:00:random")
        #expect(found?.name == "wear" && found?.services16 == [0xFDD2] && found?.rssi == -59)
        // BR/EDR (type 0) and data cut short are not LE advertisements.
        var classic = event
        classic[6] = 0
        #expect(ManagementDiscovery.deviceFound(classic[...]) == nil)
        #expect(ManagementDiscovery.deviceFound(event.dropLast(2)[...]) == nil)
        #expect(ManagementDiscovery.deviceFound(bytes("00 00 00")[...]) == nil)
    }
}

/// The kernel's discovery as the management channel speaks it, from a fake kernel on a socket pair.
@Suite struct ManagementDiscoveryTests {
    static func packet(_ code: UInt16, index: UInt16, _ parameters: [UInt8]) -> [UInt8] {
        [UInt8(code & 0xFF), UInt8(code >> 8), UInt8(index & 0xFF), UInt8(index >> 8),
         UInt8(parameters.count & 0xFF), UInt8(parameters.count >> 8)] + parameters
    }

    /// Answers each command read from `fd` with `answers[opcode]` (packets, in order) until the other end closes;
    /// tells `answered` each command's opcode once it is answered.
    static func fakeKernel(_ fd: Int32, answers: [UInt16: [[UInt8]]], answered: @Sendable (UInt16) -> Void = { _ in }) {
        var buffer = [UInt8](repeating: 0, count: 512)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            guard n >= 6 else { break }
            let opcode = UInt16(buffer[0]) | UInt16(buffer[1]) << 8
            for p in answers[opcode] ?? [] {
                _ = p.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            }
            answered(opcode)
        }
        Glibc.close(fd)
    }

    /// Linux 6.12 with btvirt (the VM): Start Discovery → Discovering, Device Found (the controller's report of an
    /// advertiser already on air, sent once as its scan started), and only then the command's Command Complete. The
    /// scan dropped every event before the answer, so it found nothing in one search in two.
    @Test func aDeviceFoundBeforeTheAnswerToStartDiscoveryIsKept() async throws {
        try await withTimeLimit {
            var fds: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
            let (ours, kernel) = (fds[0], fds[1])
            let wearable = bytes("00 00 00 01 aa 00 01 c5 00 00 00 00 0d 00 02 01 06 03 03 d2 fd 05 09 77 65 61 72")
            let other = bytes("01 00 00 01 aa 00 01 c0 00 00 00 00 07 00 02 01 06 03 03 d2 fd")
            let answers: [UInt16: [[UInt8]]] = [
                0x0023: [Self.packet(0x0013, index: 1, [0x06, 1]), Self.packet(0x0012, index: 1, wearable),
                         Self.packet(0x0012, index: 0, other),  // another adapter's
                         Self.packet(0x0001, index: 1, [0x23, 0x00, 0x00, 0x06])],
                // A report that comes while discovery stops still counts.
                0x0024: [Self.packet(0x0012, index: 1, other), Self.packet(0x0001, index: 1, [0x24, 0x00, 0x00, 0x06]),
                         Self.packet(0x0013, index: 1, [0x06, 0])],
            ]
            try DedicatedThread.spawn(name: "fake-kernel") { Self.fakeKernel(kernel, answers: answers) }
            // The deadline has passed: the scan starts discovery, stops it, and returns what came meanwhile.
            let found = await ManagementDiscovery.scan(index: 1, until: .now, socket: { ManagementSocket(adopting: ours) })
            #expect(found?.map(\.address.description) == ["ble:00:AA:01:00:00:00", "ble:00:AA:01:00:00:01"])
            #expect(found?.first?.name == "wear")
        }
    }

    /// A scan reads the kernel's events as they come, through the I/O reactor, for as long as it lasts (an hour
    /// here): cancelled, it returns at once with what it found (an hour-long scan that ignored cancellation would trip
    /// the time limit), and still asks the kernel to stop its discovery.
    @Test func aCancelledScanReturnsWhatItFoundAndStopsTheDiscovery() async throws {
        try await withTimeLimit {
            var fds: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
            let (ours, kernel) = (fds[0], fds[1])
            let wearable = bytes("00 00 00 01 aa 00 01 c5 00 00 00 00 0d 00 02 01 06 03 03 d2 fd 05 09 77 65 61 72")
            let answers: [UInt16: [[UInt8]]] = [
                0x0023: [Self.packet(0x0001, index: 1, [0x23, 0x00, 0x00, 0x06]), Self.packet(0x0012, index: 1, wearable)],
                0x0024: [Self.packet(0x0001, index: 1, [0x24, 0x00, 0x00, 0x06])],
            ]
            let received = Mutex<[UInt16]>([])
            try DedicatedThread.spawn(name: "fake-kernel") { Self.fakeKernel(kernel, answers: answers, answered: { opcode in received.withLock { $0.append(opcode) } }) }
            let scan = Task { await ManagementDiscovery.scan(index: 1, until: .now + .seconds(3600), socket: { ManagementSocket(adopting: ours) }) }
            // The Device Found event after the command's answer has been read by the scan (nothing left unread).
            try await waitUntil("the scan read the kernel's events") {
                var unread: Int32 = -1
                return received.withLock { $0 == [0x0023] } && ioctl(ours, UInt(FIONREAD), &unread) == 0 && unread == 0
            }
            scan.cancel()
            let found = await scan.value
            #expect(found?.map(\.address.description) == ["ble:00:AA:01:00:00:00"])
            try await waitUntil("the kernel is asked to stop the discovery") { received.withLock { $0 } == [0x0023, 0x0024] }
        }
    }
}

/// The peripheral's end of an LE link: the management interface's Get Connections reply, and the accepted link's
/// transport (on an AF_UNIX SOCK_SEQPACKET pair here: without the management interface its close() releases the
/// socket only, at once).
@Suite struct BLEPeripheralLinkTests {
    @Test func managementConnections() {
        // Four links: BR/EDR (type 0), LE public, LE random; the fourth cut short.
        let reply = bytes("04 00  11 22 33 44 55 66 00  00 00 00 01 aa 00 01  06 05 04 03 02 01 02  01 02 03")
        #expect(ManagementLinks.peers(reply) == [
            .init(address: [0x00, 0x00, 0x00, 0x01, 0xAA, 0x00], type: 1),
            .init(address: [0x06, 0x05, 0x04, 0x03, 0x02, 0x01], type: 2),
        ])
        #expect(ManagementLinks.peers(bytes("00 00")) == [])
        #expect(ManagementLinks.peers([0x01]) == [])
    }

    @Test func linkForwardsAndCloses() async throws {
        try await withTimeLimit {
            var fds: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
            let inner = try FileDescriptorTransport(adopting: fds[0], peerDescription: "ble:00:AA:01:01:00:01", framing: .packets)
            let peer = try FileDescriptorTransport(adopting: fds[1], peerDescription: "central", framing: .packets)
            let link = BLEPeripheralLink(inner, adapter: 0, peer: .init(address: [1, 0, 1, 1, 0xAA, 0], type: 1), logger: nil)
            #expect(link.peerDescription == "ble:00:AA:01:01:00:01" && link.framing == .packets)
            try await link.send([0x1B, 0x0A, 0x00, 0x01])
            #expect(try await peer.receive() == [0x1B, 0x0A, 0x00, 0x01])
            try await peer.send([0x0A, 0x03, 0x00])
            #expect(try await link.receive() == [0x0A, 0x03, 0x00])
            await link.close()
            _ = await expectTransportError(.closed) { _ = try await peer.receive() }
            _ = await expectTransportError(.closed) { try await link.send([1]) }
            await link.close()
            await peer.close()
        }
    }
}

/// The peripheral's listener: its accept/close logic on a Unix socket (no Bluetooth here), with the waits on the
/// reactor. Not advertising through the management interface, its close() sends an HCI command on a short-lived
/// thread, which fails here without harm.
@Suite struct ATTListenerTests {
    func listener() throws -> (ATTListener, @Sendable () throws -> Int32, String) {
        let (fd, connect) = try unixListener()
        let target = try #require(descriptorTarget(fd))
        let adapter = BluetoothAdapter(id: 0, name: "hci0", address: BluetoothAddress("00:AA:01:00:00:00")!, isUp: true,
                                       isConnectable: true, isDiscoverable: false)
        return (ATTListener(adoptingListeningSocket: fd, adapter: adapter, logger: nil), connect, target)
    }

    @Test func acceptHandsOutAPacketTransport() async throws {
        try await withTimeLimit {
            let (listener, connect, _) = try listener()
            defer { listener.close() }
            let waiting = Task { try await listener.accept() }
            try await waitUntil("accept() waits") { listener.pendingAccepts == 1 }
            let client = try FileDescriptorTransport(adopting: try connect(), peerDescription: "central")
            let server = try await waiting.value
            #expect(server.peerDescription == "ble:unknown" && server.framing == .packets)
            try await client.send([0x02, 0x17, 0x00])
            #expect(try await server.receive() == [0x02, 0x17, 0x00])
            await client.close()
            await server.close()
        }
    }

    /// close() wakes every waiting accept (they throw `.closed`; one it did not wake would wait until the watchdog
    /// cancels it and fail the check), and the socket is released once the last of them is out.
    @Test func closeWakesPendingAcceptsAndReleasesTheSocket() async throws {
        try await withTimeLimit {
            let (listener, _, socket) = try listener()
            let accepts = [Task { try await listener.accept() }, Task { try await listener.accept() }]
            try await waitUntil("both accepts wait") { listener.pendingAccepts == 2 }
            listener.close()
            for task in accepts {
                await #expect(throws: TransportError(.closed, "")) { _ = try await value(of: task, cancellingAfter: .seconds(30)) }
            }
            let later = await expectTransportError(.closed) { _ = try await listener.accept() }
            #expect(later?.message == "the listener on ble:00:AA:01:00:00:00 is closed")
            _ = try await settledValue(below: 1) { openDescriptorTargets().contains(socket) ? 1 : 0 }
            #expect(!openDescriptorTargets().contains(socket), "the listening socket is still open")
            listener.close()  // idempotent
        }
    }
}

/// On this kernel (no AF_BLUETOOTH) every BLE entry point fails at once with one line.
@Suite(.enabled(if: !hostHasBluetooth, "this kernel has Bluetooth; the VM scenario covers the real stack"))
struct NoBluetoothBLETests {
    let unsupported = "no Bluetooth support in this kernel (AF_BLUETOOTH unavailable)"

    @Test func connectIsUnsupported() async throws {
        try await withTimeLimit {
            let error = await expectTransportError(.unsupported) {
                _ = try await BLEConnection.connect(to: BLEAddress(parsing: "00:AA:01:00:00:00")!, timeout: .seconds(30))
            }
            #expect(error?.message == "cannot connect to ble:00:AA:01:00:00:00: \(unsupported)")
            #expect(error?.errno == EAFNOSUPPORT)
        }
    }

    @Test func listenAndScanAreUnsupported() async throws {
        try await withTimeLimit {
            let listen = await expectTransportError(.unsupported) { _ = try await ATTListener.bind(adapter: "hci0", name: "w") }
            #expect(listen?.message == "cannot serve BLE on hci0: \(unsupported)")
            let scan = await expectTransportError(.unsupported) { _ = try await BLEScanner.scan(for: .seconds(1)) }
            #expect(scan?.message == "cannot scan for BLE devices: \(unsupported)")
        }
    }
}
