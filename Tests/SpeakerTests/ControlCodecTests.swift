import Testing
import Speaker
import TestSupport

@Suite struct ControlCodecTests {
    @Test func everyMessageTypeHasAnExample() {
        let types = Set(Examples.control.map { $0.packet.message.type })
        let expected = Set(RequestType.allCases.map(\.rawValue) + RequestType.allCases.map(\.replyType) + EventType.allCases.map(\.rawValue)
            + [0x7E, 0x7F])
        // Every ack reply (0x84...) shares `done`; one example of it is enough.
        let acks = Set(AckedRequest.allCases.map { $0.request.replyType })
        #expect(expected.subtracting(acks).subtracting(types).isEmpty, "types without an example")
    }

    @Test func examplesRoundTripByteForByte() throws {
        for (name, packet) in Examples.control {
            let bytes = packet.encode()
            let decoded = try ControlPacket.decode(bytes)
            #expect(decoded == packet, "\(name)")
            #expect(decoded.encode() == bytes, "\(name)")
        }
    }

    @Test func everyAckRoundTrips() throws {
        for request in AckedRequest.allCases {
            let packet = try ControlPacket(requestId: 9, message: .done(request))
            #expect(packet.encode().count == ControlFrame.overhead)
            #expect(try ControlPacket.decode(packet.encode()) == packet)
            #expect(packet.kind == .reply)
        }
    }

    @Test func helloLayoutIsExact() {
        let bytes = Examples.control[0].packet.encode()
        #expect(Array(bytes.prefix(10)) == [0x54, 0x53, 0x01, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x09])
        #expect(Array(bytes[10..<19]) == [0x01, 0x01, 0x06] + Array("tuneup".utf8))
        let crc = CRC32.checksum(bytes.dropLast(4))
        #expect(Array(bytes.suffix(4)) == [UInt8(crc >> 24), UInt8(truncatingIfNeeded: crc >> 16), UInt8(truncatingIfNeeded: crc >> 8), UInt8(truncatingIfNeeded: crc)])
    }

    @Test func crcCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    @Test func kindsFollowTheTypeRanges() {
        for (name, packet) in Examples.control {
            let expected: ControlMessageKind = switch packet.message.type {
            case 0x01...0x3F: .request
            case 0x40...0x7D: .event
            case 0x7E: .accepted
            default: .reply
            }
            #expect(packet.kind == expected, "\(name)")
            #expect((packet.requestId == 0) == (expected == .event), "\(name)")
        }
    }

    @Test func randomMessagesRoundTrip() throws {
        var rng = TestRandom(seed: 0x5EA4_E12)
        for _ in 0..<500 {
            let id = UInt32.random(in: 1...UInt32.max, using: &rng)
            let text = try WireText(String(repeating: "é", count: Int.random(in: 0...127, using: &rng)))
            let messages: [ControlMessage] = [
                .setVolume(try SpeakerVolume(Int.random(in: 0...50, using: &rng))),
                .setBalance(try SpeakerBalance(Int.random(in: -6...6, using: &rng))),
                .setName(text),
                .clockSync(t1: rng.next()),
                .setClockMap(try ClockMap(controllerReference: rng.next(), speakerReference: rng.next(),
                                          rate: Int32.random(in: -ClockMap.maxRate...ClockMap.maxRate, using: &rng))),
                .status(PlaybackStatus(state: PlayerState.allCases.randomElement(using: &rng)!, streamId: UInt32.random(in: 0...9, using: &rng),
                                       renderedFrames: rng.next(), lostPackets: UInt32.random(in: 0...UInt32.max, using: &rng),
                                       latePackets: 1, muted: Bool.random(using: &rng))),
                .failed(FailureReply(request: RequestType.allCases.randomElement(using: &rng)!,
                                     code: DeviceErrorCode.allCases.randomElement(using: &rng)!, message: text)),
            ]
            for message in messages {
                let packet = try ControlPacket(requestId: id, message: message)
                #expect(try ControlPacket.decode(packet.encode()) == packet)
            }
            let event = try ControlPacket.event(.deviceStateUpdated(DeviceStateUpdate(
                deviceId: rng.next(), reason: StateUpdateReason.allCases.randomElement(using: &rng)!)))
            #expect(try ControlPacket.decode(event.encode()) == event)
        }
    }

    @Test func helloNegotiatesTheHighestCommonVersion() throws {
        #expect(try Hello(minVersion: 1, maxVersion: 3, controllerName: "c").negotiate(with: 1...2) == 2)
        #expect(try Hello(minVersion: 1, maxVersion: 1, controllerName: "c").negotiate() == 1)
        #expect(try Hello(minVersion: 2, maxVersion: 4, controllerName: "c").negotiate(with: 1...1) == nil)
        #expect(thrownCode { () throws(SpeakerError) in try Hello(minVersion: 2, maxVersion: 1, controllerName: "c") } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try Hello(minVersion: 0, maxVersion: 1, controllerName: "c") } == .valueOutOfRange)
    }

    @Test func valuesAreValidByConstruction() {
        #expect(thrownCode { () throws(SpeakerError) in try SpeakerVolume(51) } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try SpeakerVolume(-1) } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try SpeakerBalance(7) } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try SpeakerBalance(-7) } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try WireText(String(repeating: "a", count: 256)) } == .badText)
        #expect(thrownCode { () throws(SpeakerError) in try WireText(String(repeating: "a", count: 255)) } == nil)
        #expect(thrownCode { () throws(SpeakerError) in try MACAddress([1, 2, 3]) } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try GroupAssignment(groupId: 0, groupName: "x") } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try GroupAssignment(groupId: 1, groupName: "") } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try PlayRequest(streamId: 0, format: .cd, source: .localFile, title: "") } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try AudioFormat(sampleRate: 7_999, channels: 2, sampleFormat: .s16le) } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try AudioFormat(sampleRate: 48_000, channels: 9, sampleFormat: .s16le) } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try ClockMap(controllerReference: 0, speakerReference: 0, rate: 10_000_001) } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try ClockSyncReply(t1: 0, t2: 5, t3: 4) } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try ControlFrame(version: 1, type: 2, requestId: 1, payload: [UInt8](repeating: 0, count: 4097)) } == .tooLarge)
        var info = Examples.deviceInfo
        #expect(thrownCode { () throws(SpeakerError) in try info.setWifiSignalStrength(1) } == .valueOutOfRange)
        #expect(thrownCode { () throws(SpeakerError) in try info.setWifiSignalStrength(-100) } == nil)
        #expect(info.macAddress.description == "b0:38:29:1b:36:1f")
        #expect(DeviceInfo.noGroupName.value == "harman")
    }

    @Test func requestIdsFollowTheKind() {
        #expect(thrownCode { () throws(SpeakerError) in try ControlPacket(requestId: 0, message: .getStatus) } == .badRequestId)
        #expect(thrownCode { () throws(SpeakerError) in try ControlPacket(requestId: 0, message: .done(.stop)) } == .badRequestId)
        #expect(thrownCode { () throws(SpeakerError) in try ControlPacket(requestId: 5, message: .playbackEnded(streamId: 1)) } == .badRequestId)
        #expect(thrownCode { () throws(SpeakerError) in try ControlPacket(requestId: 5, message: .getStatus, version: SpeakerProtocolVersion.supported.upperBound + 1) } == .unsupportedVersion)
    }
}
