import Glibc
import Testing
import TestSupport
import Transport
import Wearable
import WearableLink
import WearableSession
import WearableSimulator

/// Hex of a byte string ("02 f7 00"), spaces ignored.
private func bytes(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// The ATT codec against PDU layouts of the Bluetooth Core spec (Vol 3 Part F §3.4), every field little-endian.
@Suite struct ATTCodecTests {
    static let deviceInformationUUID = uuidBytes(WearableCharacteristic.deviceInformation.uuid)

    static let vectors: [(String, ATTPDU)] = [
        ("02 f7 00", .exchangeMTURequest(mtu: 247)),
        ("03 05 02", .exchangeMTUResponse(mtu: 517)),
        ("10 01 00 ff ff 00 28", .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService)),
        ("11 06 01 00 13 00 d2 fd", .readByGroupTypeResponse([ATTGroupValue(handle: 1, end: 0x13, value: [0xD2, 0xFD])])),
        ("08 01 00 13 00 03 28", .readByTypeRequest(start: 1, end: 0x13, type: .characteristic)),
        ("09 15 02 00 02 03 00 43 dd 7b ab b2 ef ab a0 33 43 1c 04 83 ad 61 7b",
         .readByTypeResponse([ATTHandleValue(handle: 2, value: [0x02, 0x03, 0x00] + deviceInformationUUID.reversed())])),
        ("04 0b 00 0b 00", .findInformationRequest(start: 0x0B, end: 0x0B)),
        ("05 01 0b 00 02 29", .findInformationResponse([ATTHandleType(handle: 0x0B, type: .clientConfiguration)])),
        ("06 01 00 ff ff 00 28 d2 fd", .findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800, value: [0xD2, 0xFD])),
        ("07 01 00 13 00", .findByTypeValueResponse([ATTGroup(handle: 1, end: 0x13)])),
        ("0a 03 00", .readRequest(handle: 3)),
        ("0b 01 02 40 20", .readResponse(value: [1, 2, 0x40, 0x20])),
        ("0c 05 00 16 00", .readBlobRequest(handle: 5, offset: 22)),
        ("0d 00 1f", .readBlobResponse(value: [0, 0x1F])),
        ("12 0b 00 01 00", .writeRequest(handle: 0x0B, value: [1, 0])),
        ("13", .writeResponse),
        ("52 07 00 00", .writeCommand(handle: 7, value: [0])),
        ("1b 12 00 81 ab cd", .notification(handle: 0x12, value: [0x81, 0xAB, 0xCD])),
        ("1d 12 00 81", .indication(handle: 0x12, value: [0x81])),
        ("1e", .confirmation),
        ("01 12 07 00 80", .errorResponse(requestOpcode: 0x12, handle: 7, error: .periodNotAvailable)),
        ("01 10 14 00 0a", .errorResponse(requestOpcode: 0x10, handle: 0x14, error: .attributeNotFound)),
        ("16 07 00 00 00 01", .other(opcode: 0x16, parameters: [7, 0, 0, 0, 1])),
    ]

    @Test(arguments: 0..<vectors.count)
    func specVector(_ index: Int) throws {
        let (hex, pdu) = Self.vectors[index]
        #expect(ATTCodec.encode(pdu) == bytes(hex))
        #expect(try ATTCodec.decode(bytes(hex)) == pdu)
    }

    @Test func refusesCutAndPaddedPDUs() {
        for hex in ["", "02 f7", "0a 03", "01 12 07 00", "11 06 01 00 13 00 d2", "09 00", "05 03 0b 00 02 29", "04 01 00 02 00 ff", "13 00"] {
            #expect(throws: WearableError.self, "\(hex)") { try ATTCodec.decode(bytes(hex)) }
        }
    }

    @Test func uuidsTravelLeastSignificantFirst() {
        let uuid = ATTUUID.uuid128(Self.deviceInformationUUID)
        #expect(uuid.wire.first == 0x43 && uuid.wire.last == 0x7B)
        #expect(ATTUUID(wire: uuid.wire[...]) == uuid)
        #expect(ATTUUID.uuid16(0xFDD2).bytes128 == bytes("0000fdd2 0000 1000 8000 00805f9b34fb"))
    }
}

/// The pure server: discovery answered from the layout, requests handed to the device as GATT PDUs.
@Suite struct ATTServerTests {
    @Test func discoveryFollowsTheLayoutAndTheMTU() throws {
        var server = ATTServer(layout: .wearable)
        #expect(server.receive(.readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService))
            == .respond(.readByGroupTypeResponse([ATTGroupValue(handle: 1, end: 0x13, value: [0xD2, 0xFD])])))
        #expect(server.receive(.readByGroupTypeRequest(start: 0x14, end: 0xFFFF, type: .primaryService))
            == .respond(.errorResponse(requestOpcode: 0x10, handle: 0x14, error: .attributeNotFound)))
        // MTU 23: one 21-byte characteristic declaration per response.
        guard case let .respond(.readByTypeResponse(first)) = server.receive(.readByTypeRequest(start: 1, end: 0x13, type: .characteristic)) else {
            Issue.record("no declarations")
            return
        }
        #expect(first.map(\.handle) == [2])
        #expect(server.receive(.exchangeMTURequest(mtu: 100)) == .forward(.exchangeMTURequest(mtu: 100)))
        #expect(server.answer(.exchangeMTUResponse(mtu: 247)) == .exchangeMTUResponse(mtu: 247))
        #expect(server.mtu == 100)
        guard case let .respond(.readByTypeResponse(all)) = server.receive(.readByTypeRequest(start: 1, end: 0x13, type: .characteristic)) else {
            Issue.record("no declarations")
            return
        }
        // MTU 100: four 21-byte entries fit in 98 bytes; the client asks again from 0x000A.
        #expect(all.map(\.handle) == [2, 4, 6, 9])
        #expect(server.receive(.readRequest(handle: 3)) == .forward(.readRequest(handle: 3)))
        #expect(server.answer(.errorResponse(requestOpcode: 0x0A, handle: 3, error: .readNotPermitted, reason: "no"))
            == .errorResponse(requestOpcode: 0x0A, handle: 3, error: .readNotPermitted))
        #expect(server.receive(.writeRequest(handle: 2, value: [0])) == .respond(.errorResponse(requestOpcode: 0x12, handle: 2, error: .writeNotPermitted)))
        #expect(server.receive(.other(opcode: 0x16, parameters: [])) == .respond(.errorResponse(requestOpcode: 0x16, handle: 0, error: .requestNotSupported)))
        #expect(server.receive(.other(opcode: 0xD2, parameters: [])) == .ignore)
    }

    /// The client's discovery procedure against the server finds the layout the framed links send in one PDU.
    @Test(arguments: [UInt16(23), 64, 247])
    func discoveryRoundTrip(mtu: UInt16) throws {
        var server = ATTServer(layout: .wearable)
        if mtu > 23 {
            _ = server.receive(.exchangeMTURequest(mtu: mtu))
            _ = server.answer(.exchangeMTUResponse(mtu: mtu))
        }
        var discovery = GATTDiscovery(service: 0xFDD2)
        var request = discovery.start()
        for _ in 0..<50 {
            guard case let .respond(response) = server.receive(request) else { Issue.record("not answered: \(request)"); return }
            #expect(ATTCodec.encode(response).count <= Int(mtu))
            switch discovery.receive(response) {
            case let .send(next): request = next
            case let .done(layout):
                #expect(layout == .wearable)
                return
            case let other: Issue.record("\(other)"); return
            }
        }
        Issue.record("discovery did not end")
    }

    @Test func aDeviceWithoutTheServiceIsNotFound() {
        var discovery = GATTDiscovery(service: 0xFDD2)
        _ = discovery.start()
        #expect(discovery.receive(.readByGroupTypeResponse([ATTGroupValue(handle: 1, end: 5, value: [0x00, 0x18]), ATTGroupValue(handle: 6, end: 9, value: [0x01, 0x18])]))
            == .send(.readByGroupTypeRequest(start: 10, end: 0xFFFF, type: .primaryService)))
        #expect(discovery.receive(.errorResponse(requestOpcode: 0x10, handle: 10, error: .attributeNotFound)) == .notFound(services: [.uuid16(0x1800), .uuid16(0x1801)]))
    }
}

/// A pair of connected AF_UNIX SOCK_SEQPACKET sockets as `.packets` transports: real sockets with real packet
/// boundaries, the shape of an L2CAP LE channel.
func seqpacketPair() throws -> (any Transport, any Transport) {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
        throw TransportError(.io, "socketpair: errno \(errno)")
    }
    return (try FileDescriptorTransport(adopting: fds[0], peerDescription: "ble:client", framing: .packets),
            try FileDescriptorTransport(adopting: fds[1], peerDescription: "ble:device", framing: .packets))
}

/// The Wearable session against the simulated wearable over real ATT on a SOCK_SEQPACKET socketpair.
@Suite struct ATTSocketPairTests {
    final class Rig: Sendable {
        let clock: ManualClock
        let device: SimulatedWearable
        let session: WearableDeviceSession
        let serving: Task<Void, Never>

        init(mtu: UInt16 = 247) throws {
            let (client, server) = try seqpacketPair()
            let clock = ManualClock()
            self.clock = clock
            let device = SimulatedWearable(profile: WearableProfile(motion: HeadMotion(seed: 3)), clock: clock)
            self.device = device
            serving = Task { await device.serve(server) }
            session = WearableDeviceSession(peer: "ble:client", options: .init(mtu: mtu)) { client }
        }

        func pump(ticks: Int) async { await pumpTransmissions(clock, ticks: ticks) }

        func shutdown() async {
            await session.close()
            await serving.value
        }
    }

    @Test func opensReadsConfiguresStreamsAndGetsGestures() async throws {
        let rig = try Rig()
        try await rig.session.open()
        let profile = rig.device.profile
        #expect(await rig.session.mtu == 247)
        #expect(await rig.session.deviceInformation == profile.deviceInformation)
        #expect(await rig.session.sensorInformation == profile.sensorInformation)
        #expect(await rig.session.gestureInformation == profile.gestureInformation)
        let readings = await rig.session.sensorReadings()
        let gestures = await rig.session.gestureReadings()
        let configured = try await rig.session.configureSensors { $0.enable(sensor: .accelerometer, at: ._20ms); $0.enable(sensor: .gyroscope, at: ._20ms) }
        #expect(configured.enabledSensors == [.accelerometer, .gyroscope])
        try await rig.session.configureGestures { $0.set(gesture: .doubleTap, enabled: true) }
        rig.device.tap(double: true)
        await rig.pump(ticks: 5)
        let samples = await collect(readings, 20)
        #expect(samples.count == 20)
        #expect(samples.allSatisfy { $0.missingBefore == 0 })
        #expect(Set(samples.map(\.sensor)) == [.accelerometer, .gyroscope])
        let tapped = await collect(gestures, 1)
        #expect(tapped.map(\.gesture) == [.doubleTap])
        // A rule of the device refused over ATT: the code arrives, the reason stays on the device.
        await #expect(throws: WearableSessionError.self) {
            try await rig.session.configureSensors(checked: false) { $0.enable(sensor: .uncalibratedMagnetometer, at: ._20ms) }
        }
        let stats = rig.device.statistics
        #expect(stats.refusals[ATTError.sensorNotAvailable.rawValue] == 1)
        await rig.shutdown()
    }

    /// With the smallest MTU the 48-byte SensorInformation is a long value: read, then Read Blob.
    @Test func smallestMTUReadsLongValuesInParts() async throws {
        let rig = try Rig(mtu: 23)
        try await rig.session.open()
        #expect(await rig.session.mtu == 23)
        #expect(await rig.session.sensorInformation == rig.device.profile.sensorInformation)
        let readings = await rig.session.sensorReadings()
        try await rig.session.configureSensors { $0.enable(sensor: .rotation, at: ._20ms) }
        await rig.pump(ticks: 3)
        #expect(await collect(readings, 4).count == 4)
        await rig.shutdown()
    }

    /// A device without the Wearable service: one clear error.
    @Test func aPeerWithoutTheServiceIsNotAWearable() async throws {
        let (client, server) = try seqpacketPair()
        let peer = Task {
            // A GATT server with only 0x1800: every discovery request past it is "attribute not found".
            while let packet = try? await server.receive() {
                let pdu = try? ATTCodec.decode(packet)
                let answer: ATTPDU
                switch pdu {
                case let .exchangeMTURequest(m)?: answer = .exchangeMTUResponse(mtu: m)
                case .readByGroupTypeRequest(1, _, _)?: answer = .readByGroupTypeResponse([ATTGroupValue(handle: 1, end: 5, value: [0x00, 0x18])])
                default: answer = .errorResponse(requestOpcode: packet.first ?? 0, handle: pdu?.requestHandle ?? 0, error: .attributeNotFound)
                }
                try? await server.send(ATTCodec.encode(answer))
            }
        }
        let session = WearableDeviceSession(peer: "ble:other") { client }
        do {
            try await session.open()
            Issue.record("opened")
        } catch let error as WearableSessionError {
            #expect(error.code == .notAWearable)
            #expect(error.message.contains("no primary service 0xfdd2 (it has 0x1800)"), "\(error.message)")
        }
        await server.close()
        await peer.value
    }
}
