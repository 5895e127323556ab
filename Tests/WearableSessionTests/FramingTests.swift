import Testing
import Wearable
import WearableLink

/// The GATT framing over byte streams: the hex examples of docs/wearable.md §6, round trips, and a stream decoder
/// that resynchronises and never traps.
@Suite struct FramingTests {
    static let vectors: [(GATTPDU, String)] = [
        (.exchangeMTURequest(mtu: 247), "57 00 03 02 00 f7"),
        (.exchangeMTUResponse(mtu: 247), "57 00 03 03 00 f7"),
        (.discoverRequest, "57 00 01 10"),
        (.readRequest(handle: 0x0003), "57 00 03 0a 00 03"),
        (.readResponse(handle: 0x0007, value: [0x00, 0x00, 0x00, 0x01, 0x00, 0x00]), "57 00 09 0b 00 07 00 00 00 01 00 00"),
        (.writeRequest(handle: 0x0007, value: [0x00, 0x00, 0x14, 0x01, 0x00, 0x14, 0x02, 0x00, 0x00, 0x03, 0x00, 0x00]),
         "57 00 0f 12 00 07 00 00 14 01 00 14 02 00 00 03 00 00"),
        (.writeResponse(handle: 0x0007), "57 00 03 13 00 07"),
        (.writeRequest(handle: 0x000B, value: [0x01, 0x00]), "57 00 05 12 00 0b 01 00"),
        (.notification(handle: 0x000A, value: [0x00, 0x12, 0x34, 0x10, 0x00, 0xF0, 0x00, 0x00, 0x00, 0x03]),
         "57 00 0d 1b 00 0a 00 12 34 10 00 f0 00 00 00 03"),
        (.errorResponse(requestOpcode: 0x12, handle: 0x0007, error: .periodNotAvailable, reason: "no"), "57 00 07 01 12 00 07 80 6e 6f"),
    ]

    @Test func documentedVectors() throws {
        for (pdu, text) in Self.vectors {
            #expect(hexString(GATTFraming.encode(pdu)) == text, "\(pdu)")
            #expect(try GATTFraming.decode(GATTFraming.encode(pdu)) == pdu)
        }
    }

    @Test func theSimulatedLayoutHasTheDocumentedHandles() throws {
        let layout = GATTServiceLayout.wearable
        #expect(layout.serviceUUID16 == 0xFDD2)
        #expect(layout[.deviceInformation]?.valueHandle == 0x0003)
        #expect(layout[.sensorConfiguration]?.valueHandle == 0x0007)
        #expect(layout[.sensorConfiguration]?.configurationHandle == 0x0008)
        #expect(layout[.sensorData]?.valueHandle == 0x000A)
        #expect(layout[.sensorData]?.configurationHandle == 0x000B)
        #expect(layout[.gestureData]?.valueHandle == 0x0012)
        #expect(layout[.gestureData]?.configurationHandle == 0x0013)
        #expect(layout[.deviceInformation]?.configurationHandle == 0)
        #expect(layout.endHandle == 0x0013)
        let frame = GATTFraming.encode(.discoverResponse(layout))
        #expect(hexString(Array(frame.prefix(10))) == "57 00 9a 11 fd d2 00 01 00 13")
        #expect(hexString(Array(frame[10..<31])) == "00 03 00 00 02 7b 61 ad 83 04 1c 43 33 a0 ab ef b2 ab 7b dd 43")
        #expect(try GATTFraming.decode(frame) == .discoverResponse(layout))
    }

    @Test func responsesPairWithTheirRequests() {
        #expect(GATTPDU.readRequest(handle: 5).key == GATTPDU.readResponse(handle: 5, value: []).key)
        #expect(GATTPDU.readRequest(handle: 5).key == GATTPDU.errorResponse(requestOpcode: 0x0A, handle: 5, error: .invalidHandle, reason: "").key)
        #expect(GATTPDU.readRequest(handle: 5).key != GATTPDU.writeResponse(handle: 5).key)
        #expect(GATTPDU.writeRequest(handle: 7, value: [1]).key == GATTPDU.writeResponse(handle: 7).key)
        #expect(GATTPDU.exchangeMTURequest(mtu: 100).key == GATTPDU.exchangeMTUResponse(mtu: 23).key)
        #expect(GATTPDU.notification(handle: 10, value: []).key == nil)
    }

    @Test func roundTripsOfEveryShape() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let value = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let handle = UInt16.random(in: 0...0xFFFF, using: &rng)
            for pdu: GATTPDU in [.readResponse(handle: handle, value: value), .writeRequest(handle: handle, value: value),
                                 .notification(handle: handle, value: value), .readRequest(handle: handle),
                                 .errorResponse(requestOpcode: 0x12, handle: handle, error: ATTError(rawValue: value.first ?? 0), reason: "reason é")] {
                #expect(try GATTFraming.decode(GATTFraming.encode(pdu)) == pdu)
            }
        }
    }

    @Test func theStreamDecoderCutsAnyChunkingAndSkipsNoise() {
        let pdus = Self.vectors.map(\.0)
        var stream: [UInt8] = [0x00, 0xFF, 0x57, 0x00, 0x00]  // noise, then a magic byte with a zero length
        for pdu in pdus { stream += GATTFraming.encode(pdu) + [0x13] }
        for chunkSize in [1, 2, 3, 7, 64, stream.count] {
            var decoder = GATTStreamDecoder()
            var out: [GATTPDU] = []
            var i = 0
            while i < stream.count {
                decoder.append(Array(stream[i..<min(stream.count, i + chunkSize)]))
                i += chunkSize
                while let item = decoder.next() {
                    if case let .pdu(p) = item { out.append(p) }
                }
            }
            #expect(out == pdus, "chunk size \(chunkSize)")
            #expect(decoder.statistics.skippedBytes == 5 + pdus.count)
        }
    }

    @Test func badFramesAreRejectedAndTheStreamGoesOn() {
        var decoder = GATTStreamDecoder()
        // An unknown opcode, a truncated read request, a reason that is not UTF-8, then a good frame.
        decoder.append([0x57, 0x00, 0x01, 0x77, 0x57, 0x00, 0x02, 0x0A, 0x00, 0x57, 0x00, 0x06, 0x01, 0x12, 0x00, 0x07, 0x80, 0xFF])
        decoder.append(GATTFraming.encode(.writeResponse(handle: 7)))
        var rejected: [WearableError] = []
        var good: [GATTPDU] = []
        while let item = decoder.next() {
            switch item {
            case let .pdu(p): good.append(p)
            case let .rejected(e): rejected.append(e)
            }
        }
        #expect(rejected.map(\.code) == [.malformed, .truncated, .malformed])
        #expect(good == [.writeResponse(handle: 7)])
        #expect(decoder.statistics.badFrames == 3)
    }

    @Test func wholeFrameDecodingRefusesWrongLengths() {
        #expect(throws: WearableError.self) { try GATTFraming.decode([0x57, 0x00, 0x05, 0x0A, 0x00, 0x03]) }
        #expect(throws: WearableError.self) { try GATTFraming.decode([0x58, 0x00, 0x03, 0x0A, 0x00, 0x03]) }
        #expect(throws: WearableError.self) { try GATTFraming.decode([0x57, 0x00, 0x02, 0x0A, 0x00, 0x03]) }
        #expect(throws: WearableError.self) { try GATTFraming.decode([]) }
    }
}
