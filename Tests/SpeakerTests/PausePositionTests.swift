import Testing
import Speaker

/// Version 5's `playbackPaused` event (docs/speaker-protocol.md §3.2, §4): the first frame a paused speaker has not
/// played, exactly as laid out, and only in version-5 frames.
@Suite struct PausePositionTests {
    @Test func thePausePositionRoundTripsInVersion5WithItsLayout() throws {
        let event = ControlMessage.playbackPaused(PausePosition(streamId: 7, nextFrame: 0x0102_0304_0506_0708))
        let bytes = try ControlPacket.event(event, version: 5).encode()
        #expect(Array(bytes.prefix(10)) == [0x54, 0x53, 0x05, 0x47, 0, 0, 0, 0, 0x00, 0x0C])
        #expect(Array(bytes[10..<22]) == [0, 0, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8])
        let decoded = try ControlPacket.decode(bytes)
        #expect(decoded.message == event)
        #expect(decoded.kind == .event)
        #expect(decoded.encode() == bytes)
    }

    @Test func nothingPlayedIsTheHighestFrameAndHasNoFrame() throws {
        let p = PausePosition(streamId: 7, nextFrame: PausePosition.nothingPlayed)
        #expect(p.frame == nil)
        #expect(PausePosition(streamId: 7, nextFrame: 0).frame == 0)
        let bytes = try ControlPacket.event(.playbackPaused(p), version: 5).encode()
        #expect(try ControlPacket.decode(bytes).message == .playbackPaused(p))
    }

    @Test func beforeVersion5TheEventIsUnknownBothWays() throws {
        let event = ControlMessage.playbackPaused(PausePosition(streamId: 7, nextFrame: 9))
        for version: UInt8 in 1...4 {
            #expect(throws: SpeakerError.self) { try ControlPacket.event(event, version: version) }
            // A version-5 frame relabelled as an older version is refused as a type that version does not define.
            let frame = try! ControlFrame(version: version, type: 0x47, requestId: 0, payload: event.encodePayload())
            #expect(thrownCode { () throws(SpeakerError) in _ = try ControlPacket.decode(frame.encode()) } == .unknownType)
        }
    }

    @Test func aShortOrLongPayloadIsRefusedNotTrapped() throws {
        let payload = PausePosition(streamId: 7, nextFrame: 9)
        let full = ControlMessage.playbackPaused(payload).encodePayload()
        for cut in 0..<full.count {
            let frame = try! ControlFrame(version: 5, type: 0x47, requestId: 0, payload: Array(full.prefix(cut)))
            #expect(throws: SpeakerError.self) { try ControlPacket.decode(frame.encode()) }
        }
        let long = try! ControlFrame(version: 5, type: 0x47, requestId: 0, payload: full + [0])
        #expect(throws: SpeakerError.self) { try ControlPacket.decode(long.encode()) }
        // With a request id it is not an event.
        let withId = try! ControlFrame(version: 5, type: 0x47, requestId: 3, payload: full)
        #expect(throws: SpeakerError.self) { try ControlPacket.decode(withId.encode()) }
    }
}
