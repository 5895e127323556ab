import Testing
@testable import LightX

/// The factory values (docs/protocol.md §7): round trips, strict lengths, and the documented frames.
@Suite struct FactoryCodecTests {
    static func hex(_ frame: [UInt8]) -> String { frame.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ") }

    static func replyFrame(to request: Packet, _ status: Status, _ buffer: [UInt8]) throws -> [UInt8] {
        SPPFraming.encode(try Packet.reply(to: request, status: status, buffer: buffer, swapModules: true))
    }

    /// The frames docs/protocol.md §7 shows, built from the code (the test prints the frame when an encoding changes).
    static func documentedFrames() throws -> [(name: String, frame: [UInt8], hex: String)] {
        let calibration = AncCalibration(feedforwardLeft: -120, feedforwardRight: 85, feedbackLeft: -30, feedbackRight: 210)
        return [
            ("write serial", SPPFraming.encode(try FactorySettings.writeString("TS1-000042", .configSerialNumber)),
             "ff 5a 00 00 00 1e 0f 40 82 00 00 00 00 04 0b 00 00 00 54 53 31 2d 30 30 30 30 34 32 00 7e"),
            ("write address", SPPFraming.encode(try FactorySettings.bluetoothAddress.writeRequest(BDAddress(parsing: "00:1B:66:A1:B2:C3")!)),
             "ff 5a 00 00 00 19 0f 40 82 00 00 00 00 75 06 00 00 00 c3 b2 a1 66 1b 00 ab"),
            ("start calibration", SPPFraming.encode(FactorySettings.startCalibration()),
             "ff 5a 00 00 00 17 0f 40 82 00 00 00 00 71 04 00 00 00 00 00 00 00 4a"),
            ("status reply", try replyFrame(to: FactorySettings.calibrationStatus.readRequest(), .ok,
                                            CalibrationStatus.codec.encode(.measured(calibration))),
             "ff 5a 00 00 00 1f 40 0f 81 00 00 00 00 71 0c 00 00 00 01 00 00 00 88 ff 55 00 e2 ff d2 00 ab"),
            ("hardware id reply", try replyFrame(to: FactorySettings.hardwareID.readRequest(), .ok,
                                                 HardwareID.codec.encode(HardwareID(0x1234_5678_90AB_CDEF))),
             "ff 5a 00 00 00 1b 40 0f 81 00 00 00 00 68 08 00 00 00 ef cd ab 90 78 56 34 12 41"),
            ("lock", SPPFraming.encode(try FactorySettings.lock.writeRequest(true)),
             "ff 5a 00 00 00 17 0f 40 82 00 00 00 00 69 04 00 00 00 01 00 00 00 51"),
            ("unlock", SPPFraming.encode(try FactorySettings.unlock.writeRequest(.development)),
             "ff 5a 00 00 00 23 0f 40 82 00 00 00 00 6a 10 00 00 00 54 55 4e 45 55 50 2d 46 41 43 54 4f 52 59 2d 30 b6"),
            ("refused when locked", try replyFrame(to: try FactorySettings.writeString("TS1-000042", .configSerialNumber), .notSupported, []),
             "ff 5a 00 00 00 13 40 0f 02 04 00 00 00 04 00 00 00 00 3b"),
            ("measure mic-sensitivity-left", SPPFraming.encode(FactoryMeasurement.micSensitivityLeft.readRequest()),
             "ff 5a 00 00 00 17 0f 40 81 00 00 00 00 6b 04 00 00 00 02 00 00 00 4f"),
            ("measurement reply -37.52", try replyFrame(to: FactoryMeasurement.micSensitivityLeft.readRequest(), .ok,
                                                        FactoryMeasurement.hundredthsCodec.encode(FactoryMeasurement.hundredths(-37.52))),
             "ff 5a 00 00 00 17 40 0f 81 00 00 00 00 6b 04 00 00 00 58 f1 ff ff 0a"),
            ("unknown measurement id", try replyFrame(to: FactorySettings.readMeasurement(id: 9), .exceededLimits, []),
             "ff 5a 00 00 00 13 40 0f 01 05 00 00 00 6b 00 00 00 00 d4"),
            ("measurement refused when locked", try replyFrame(to: FactoryMeasurement.ancAttenuation.readRequest(), .notSupported, []),
             "ff 5a 00 00 00 13 40 0f 01 04 00 00 00 6b 00 00 00 00 d5"),
        ]
    }

    @Test func framesAsDocumented() throws {
        for (name, frame, hex) in try Self.documentedFrames() {
            #expect(frame == bytes(hex), "\(name): \(Self.hex(frame))")
        }
    }

    @Test func roundTrips() throws {
        let id = HardwareID(0x0102_0304_0506_0708)
        #expect(try HardwareID.codec.decode(HardwareID.codec.encode(id)) == id)
        #expect(id.description == "0102030405060708")
        let address = try #require(BDAddress(parsing: "aa:BB:0c:dd:ee:0F"))
        #expect(address.description == "AA:BB:0C:DD:EE:0F")
        #expect(BDAddress.codec.encode(address) == [0x0F, 0xEE, 0xDD, 0x0C, 0xBB, 0xAA])
        #expect(try BDAddress.codec.decode(BDAddress.codec.encode(address)) == address)
        let c = AncCalibration(feedforwardLeft: .min, feedforwardRight: -1, feedbackLeft: 0, feedbackRight: .max)
        #expect(try AncCalibration.codec.decode(AncCalibration.codec.encode(c)) == c)
        for status in [CalibrationStatus.none, .measured(c), .stored(c)] {
            #expect(try CalibrationStatus.codec.decode(CalibrationStatus.codec.encode(status)) == status)
        }
        for locked in [false, true] {
            #expect(try FactorySettings.lock.decode(FactorySettings.lock.encode(locked)) == locked)
        }
        #expect(try FactoryKey.codec.decode(FactoryKey.codec.encode(.development)) == .development)
        #expect(FactoryKey(hex: "54554e4555502d464143544f52592d30") == .development)
        for command in FactoryStrings.writable {
            let text = command == .configSerialNumber ? "SN-1" : "Ünïcode name"
            let request = try FactorySettings.writeString(text, command)
            #expect(try FactoryStrings.decodeWrite(request.buffer, for: command) == text)
        }
    }

    /// The measurement ids, names and units a recipe's tests use, and the request/reply codec.
    @Test func measurements() throws {
        #expect(FactoryMeasurement.allCases.map(\.rawValue) == [1, 2, 3, 4])
        #expect(FactoryMeasurement.allCases.map(\.name) == ["battery-level", "mic-sensitivity-left", "mic-sensitivity-right", "anc-attenuation"])
        #expect(FactoryMeasurement.allCases.map(\.unit) == ["percent", "dBFS", "dBFS", "dB"])
        for m in FactoryMeasurement.allCases {
            #expect(FactoryMeasurement(name: m.name) == m)
            let request = m.readRequest(.usb)
            #expect(request.opcode == .read && request.command == .factoryMeasurement && request.header.source == .usb)
            #expect(try FactoryMeasurement.decodeRequest(request.buffer) == m)
        }
        #expect(FactoryMeasurement(name: "Battery-Level") == nil)
        #expect(FactoryMeasurement(name: "") == nil)
        for value in [-37.52, 0, 100, 23.87, -0.01] {
            let buffer = FactoryMeasurement.hundredthsCodec.encode(FactoryMeasurement.hundredths(value))
            #expect(try FactoryMeasurement.decodeValue(buffer[...]) == value)
        }
        #expect(FactoryMeasurement.hundredths(1e12) == .max)
        #expect(FactoryMeasurement.hundredths(-.infinity) == .min)
        #expect(FactoryMeasurement.hundredths(.nan) == 0)
    }

    /// Truncated, over-long and wrong-length buffers are errors (truncated / malformed), never a guess or a trap.
    @Test func badInput() {
        func code(_ body: () throws -> Void) -> LightXError.Code? {
            do { try body(); return nil } catch { return (error as? LightXError)?.code }
        }
        #expect(code { _ = try HardwareID.codec.decode([1, 2, 3]) } == .truncated)
        #expect(code { _ = try HardwareID.codec.decode([UInt8](repeating: 1, count: 9)) } == .malformed)
        #expect(code { _ = try HardwareID.codec.decode([UInt8](repeating: 0, count: 256)) } == .malformed)
        #expect(code { _ = try BDAddress.codec.decode([1, 2, 3, 4, 5]) } == .truncated)
        #expect(code { _ = try BDAddress.codec.decode([1, 2, 3, 4, 5, 6, 7]) } == .malformed)
        #expect(code { _ = try AncCalibration.codec.decode([1, 2, 3, 4, 5, 6, 7]) } == .truncated)
        #expect(code { _ = try AncCalibration.codec.decode([UInt8](repeating: 0, count: 12)) } == .malformed)
        #expect(code { _ = try CalibrationStatus.codec.decode([]) } == .truncated)
        #expect(code { _ = try CalibrationStatus.codec.decode([0, 0, 0, 0, 9]) } == .malformed)
        #expect(code { _ = try CalibrationStatus.codec.decode([1, 0, 0, 0, 1, 2]) } == .truncated)
        #expect(code { _ = try CalibrationStatus.codec.decode([3, 0, 0, 0]) } == .malformed)
        #expect(code { _ = try FactorySettings.lock.decode([1, 0, 0]) } == .truncated)
        #expect(code { _ = try FactorySettings.lock.decode([2, 0, 0, 0]) } == .malformed)
        #expect(code { _ = try FactorySettings.lock.decode([1, 0, 0, 0, 0]) } == .malformed)
        #expect(code { _ = try FactoryKey.codec.decode([UInt8](repeating: 0, count: 15)) } == .truncated)
        #expect(code { _ = try FactoryKey.codec.decode([UInt8](repeating: 0, count: 17)) } == .malformed)
        #expect(code { _ = try FactoryMeasurement.decodeRequest([2, 0, 0]) } == .truncated)
        #expect(code { _ = try FactoryMeasurement.decodeRequest([UInt8](repeating: 0, count: 256)[...]) } == .malformed)
        #expect(code { _ = try FactoryMeasurement.decodeRequest([5, 0, 0, 0]) } == .valueOutOfRange)
        #expect(code { _ = try FactoryMeasurement.decodeRequest([0, 0, 0, 0]) } == .valueOutOfRange)
        #expect(code { _ = try FactoryMeasurement.decodeValue([1, 2, 3]) } == .truncated)
        #expect(code { _ = try FactoryMeasurement.decodeValue([1, 2, 3, 4, 5]) } == .malformed)
        #expect(code { _ = try FactoryMeasurement.decodeValue([UInt8](repeating: 0, count: 256)[...]) } == .malformed)
        #expect(FactoryKey(hex: "54554e4555502d464143544f52592d3") == nil)
        #expect(FactoryKey(hex: "zz554e4555502d464143544f52592d30") == nil)
        #expect(BDAddress(parsing: "AA:BB:CC:DD:EE") == nil)
        #expect(BDAddress(parsing: "AA:BB:CC:DD:EE:FG") == nil)
        #expect(BDAddress(parsing: "AAA:BB:CC:DD:EE:FF") == nil)
        // Identity strings: empty, too long, not printable, no NUL, over capacity, not UTF-8.
        let serial = Command.configSerialNumber
        #expect(code { _ = try FactorySettings.writeString("", serial) } == .valueOutOfRange)
        #expect(code { _ = try FactorySettings.writeString(String(repeating: "x", count: 32), serial) } == .valueOutOfRange)
        #expect(code { _ = try FactorySettings.writeString("SN 1", serial) } == .valueOutOfRange)
        #expect(code { _ = try FactorySettings.writeString("name\u{7}", .configBTDisplayName) } == .valueOutOfRange)
        #expect(code { _ = try FactorySettings.writeString("x", .configModelNumber) } == .valueOutOfRange)
        #expect(code { _ = try FactoryStrings.decodeWrite(Array("SN-1".utf8)[...], for: serial) } == .truncated)
        #expect(code { _ = try FactoryStrings.decodeWrite([UInt8](repeating: 0x41, count: 40)[...], for: serial) } == .malformed)
        #expect(code { _ = try FactoryStrings.decodeWrite(([UInt8](repeating: 0x41, count: 32) + [0])[...], for: serial) } == .malformed)
        #expect(code { _ = try FactoryStrings.decodeWrite([0xC3, 0x28, 0][...], for: .configBTDisplayName) } == .malformed)
        #expect(code { _ = try FactoryStrings.decodeWrite([0][...], for: serial) } == .valueOutOfRange)
    }
}
