import Testing
import Speaker

/// Every way a control frame can be wrong gives a thrown `SpeakerError` with its stable code and one line.
@Suite struct BadInputTests {
    static func example(_ name: String) -> ControlPacket {
        Examples.control.first { $0.name == name }!.packet
    }

    /// The example's frame with its payload edited (length and CRC made right again).
    static func edited(_ name: String, _ edit: (inout [UInt8]) -> Void) -> [UInt8] {
        let frame = example(name).frame
        var payload = frame.payload
        edit(&payload)
        return try! ControlFrame(version: frame.version, type: frame.type, requestId: frame.requestId, payload: payload).encode()
    }

    static func code(_ bytes: [UInt8]) -> SpeakerError.Code? {
        do {
            _ = try ControlPacket.decode(bytes)
            return nil
        } catch {
            #expect(!error.message.isEmpty && !error.message.contains("\n"))
            return error.code
        }
    }

    @Test func everyTruncationIsTruncated() {
        for (name, packet) in Examples.control {
            let bytes = packet.encode()
            for n in 0..<bytes.count {
                #expect(Self.code(Array(bytes.prefix(n))) == .truncated, "\(name) cut to \(n) bytes")
            }
        }
    }

    @Test func extraBytesAreTrailing() {
        for (name, packet) in Examples.control {
            #expect(Self.code(packet.encode() + [0x00]) == .trailingBytes, "\(name)")
        }
    }

    @Test func everySingleBitFlipIsCaught() {
        for (name, packet) in Examples.control {
            let bytes = packet.encode()
            for bit in 0..<(bytes.count * 8) {
                var flipped = bytes
                flipped[bit / 8] ^= 1 << UInt8(bit % 8)
                let code = Self.code(flipped)
                #expect(code != nil, "\(name) bit \(bit)")
                if bit / 8 >= ControlFrame.headerSize { #expect(code == .badChecksum, "\(name) bit \(bit)") }
            }
        }
    }

    @Test func badMagicLengthAndChecksum() {
        let hello = Self.example("hello").encode()
        #expect(Self.code(reframed(hello) { $0[0] = 0x55 }) == .badMagic)
        #expect(Self.code(reframed(hello) { $0[1] = 0x00 }) == .badMagic)
        var long = [UInt8](repeating: 0, count: 4200)
        long[0] = 0x54; long[1] = 0x53; long[2] = 1; long[3] = 2; long[8] = 0x10; long[9] = 0x01  // length 4097
        #expect(Self.code(long) == .tooLarge)
        var crc = hello
        crc[crc.count - 1] ^= 0xFF
        #expect(Self.code(crc) == .badChecksum)
    }

    @Test func wrongVersionIsRefused() {
        for version: UInt8 in [0, SpeakerProtocolVersion.supported.upperBound + 1, 0xFF] {
            let bytes = reframed(Self.example("get-status").encode()) { $0[2] = version }
            #expect(Self.code(bytes) == .unsupportedVersion, "version \(version)")
            // The frame itself is fine: a session can answer version-mismatch.
            #expect(thrownCode { () throws(SpeakerError) in try ControlFrame.decode(bytes) } == nil)
        }
    }

    @Test func undefinedTypesAreUnknown() {
        for type: UInt8 in [0x00, 0x14, 0x3F, 0x46, 0x7D, 0x80, 0x94, 0xBF, 0xC0, 0xFF] {
            let bytes = try! ControlFrame(version: 1, type: type, requestId: 1, payload: []).encode()
            #expect(Self.code(bytes) == .unknownType, "type \(type)")
        }
    }

    @Test func requestIdRulesOnTheWire() {
        #expect(Self.code(reframed(Self.example("get-status").encode()) { $0[7] = 0 }) == .badRequestId)
        #expect(Self.code(reframed(Self.example("playback-ended").encode()) { $0[7] = 1 }) == .badRequestId)
    }

    @Test func shortAndLongPayloadsOfEveryMessage() {
        for (name, packet) in Examples.control {
            #expect(Self.code(Self.edited(name) { $0.append(0) }) == .trailingBytes, "\(name) with a byte more")
            if !packet.frame.payload.isEmpty {
                #expect(Self.code(Self.edited(name) { $0.removeLast() }) == .truncated, "\(name) with a byte less")
            }
        }
    }

    @Test func fieldsOutOfRange() {
        let cases: [(String, (inout [UInt8]) -> Void, SpeakerError.Code)] = [
            ("set-volume", { $0[0] = 51 }, .valueOutOfRange),
            ("set-mute", { $0[0] = 2 }, .valueOutOfRange),
            ("set-balance", { $0[0] = 7 }, .valueOutOfRange),
            ("set-balance", { $0[0] = 0xF9 }, .valueOutOfRange),  // -7
            ("set-name", { $0[1] = 0xFF }, .badText),  // not UTF-8
            ("set-name", { $0[0] = 8 }, .truncated),  // length says more than there is
            ("join-group", { for i in 0..<8 { $0[i] = 0 } }, .valueOutOfRange),  // group id 0
            ("join-group", { $0.removeSubrange(9...); $0[8] = 0 }, .valueOutOfRange),  // empty name
            ("hello", { $0[0] = 2 }, .valueOutOfRange),  // min above max
            ("hello", { $0[0] = 0 }, .valueOutOfRange),
            ("play", { for i in 0..<4 { $0[i] = 0 } }, .valueOutOfRange),  // stream 0
            ("play", { $0[9] = 3 }, .valueOutOfRange),  // sample format
            ("play", { $0[8] = 0 }, .valueOutOfRange),  // no channels
            ("play", { $0[4] = 0; $0[5] = 0; $0[6] = 0; $0[7] = 1 }, .valueOutOfRange),  // 1 Hz
            ("play", { $0[10] = 2 }, .valueOutOfRange),  // source
            ("set-clock-map", { $0[16] = 0x7F }, .valueOutOfRange),  // rate
            ("clock-sync-reply", { $0[8] = 0x7F }, .valueOutOfRange),  // t2 after t3
            ("status", { $0[0] = 5 }, .valueOutOfRange),
            ("status", { $0[$0.count - 1] = 2 }, .valueOutOfRange),
            ("device-info", { $0[24] = 51 }, .valueOutOfRange),  // volume
            ("device-info", { $0[25] = 2 }, .valueOutOfRange),  // active
            ("device-info", { $0[26] = 1 }, .valueOutOfRange),  // +1 dBm
            ("device-info", { $0[28] = 7 }, .valueOutOfRange),  // balance
            ("accepted", { $0[0] = 0x40 }, .valueOutOfRange),
            ("failed", { $0[0] = 0 }, .valueOutOfRange),
            ("failed", { $0[1] = 0; $0[2] = 0 }, .valueOutOfRange),  // error code 0
            ("failed", { $0[1] = 0; $0[2] = 99 }, .valueOutOfRange),
            ("device-state-updated", { $0[8] = 0 }, .valueOutOfRange),  // reason 0
            ("device-state-updated", { $0[8] = 12 }, .valueOutOfRange),
            ("error-occurred", { $0[8] = 0xFF }, .valueOutOfRange),
            ("volume-changed", { $0[8] = 60 }, .valueOutOfRange),
            ("playback-state-changed", { $0[4] = 9 }, .valueOutOfRange),
        ]
        for (name, edit, expected) in cases {
            #expect(Self.code(Self.edited(name, edit)) == expected, "\(name)")
        }
    }

    @Test func errorCodesAreStable() {
        #expect(SpeakerError.Code.allCases.map(\.rawValue) == [
            "truncated", "trailing-bytes", "too-large", "bad-magic", "unsupported-version", "unknown-type", "bad-checksum",
            "bad-request-id", "value-out-of-range", "bad-text", "bad-audio",
        ])
        #expect(SpeakerError(.truncated, "a") == SpeakerError(.truncated, "b"))
        #expect(SpeakerError(.truncated, "a").category == .device)
    }
}
