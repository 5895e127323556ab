import Speaker

// The example messages of docs/speaker-protocol.md: each one's bytes appear in the document under its name
// (`<!-- vector: NAME -->`), and DocumentTests checks them against the codec.

enum Examples {
    static let deviceId: UInt64 = 34_317_244_381_360
    static let cd = AudioFormat.cd

    static func packet(_ id: UInt32, _ message: ControlMessage) -> ControlPacket {
        try! ControlPacket(requestId: id, message: message)
    }

    static var deviceInfo: DeviceInfo {
        try! DeviceInfo(
            deviceId: deviceId, deviceName: "Adapt1", groupId: 3_431_724_438, groupName: "Bathroom", modelName: "Omni Adapt",
            ipAddress: "192.168.1.40", port: 44055, macAddress: try! MACAddress([0xB0, 0x38, 0x29, 0x1B, 0x36, 0x1F]),
            volume: try! SpeakerVolume(47), active: true, wifiSignalStrength: -47, role: 21, version: "0.1.6.2",
            balance: .neutral, isPlaying: false, channelType: 1, isMaster: true)
    }

    /// Control packets by vector name, in the document's order.
    static var control: [(name: String, packet: ControlPacket)] {
        [
            ("hello", packet(1, .hello(try! Hello(minVersion: 1, maxVersion: 1, controllerName: "tuneup")))),
            ("hello-reply", packet(1, .helloReply(HelloReply(version: 1, deviceId: deviceId, audioPort: 45456,
                                                              modelName: "Omni Adapt", firmwareVersion: "0.1.6.2")))),
            ("get-device-info", packet(2, .getDeviceInfo)),
            ("device-info", packet(2, .deviceInfo(deviceInfo))),
            ("get-status", packet(3, .getStatus)),
            ("status", packet(3, .status(PlaybackStatus(state: .playing, streamId: 7, renderedFrames: 661_500, lostPackets: 2,
                                                        latePackets: 0, muted: false)))),
            ("set-volume", packet(4, .setVolume(try! SpeakerVolume(25)))),
            ("done", packet(4, .done(.setVolume))),
            ("set-mute", packet(5, .setMute(true))),
            ("set-balance", packet(6, .setBalance(try! SpeakerBalance(-3)))),
            ("set-role", packet(7, .setRole(21))),
            ("set-channel-type", packet(8, .setChannelType(1))),
            ("set-name", packet(9, .setName("Kitchen"))),
            ("join-group", packet(10, .joinGroup(try! GroupAssignment(groupId: 3_431_724_438, groupName: "Living Room")))),
            ("leave-group", packet(11, .leaveGroup)),
            ("join-session", packet(12, .joinSession)),
            ("accepted", packet(12, .accepted(.joinSession))),
            ("leave-session", packet(13, .leaveSession)),
            ("play", packet(14, .play(try! PlayRequest(streamId: 7, format: cd, source: .localFile, title: "song.wav")))),
            ("pause", packet(15, .pause(streamId: 7))),
            ("resume", packet(16, .resume(streamId: 7))),
            ("stop", packet(17, .stop(streamId: 7))),
            ("clock-sync", packet(18, .clockSync(t1: 1_000_000_000))),
            ("clock-sync-reply", packet(18, .clockSyncReply(try! ClockSyncReply(t1: 1_000_000_000, t2: 5_000_250_000, t3: 5_000_260_000)))),
            ("set-clock-map", packet(19, .setClockMap(try! ClockMap(controllerReference: 1_000_255_000, speakerReference: 5_000_255_000, rate: 25_000)))),
            ("failed", packet(20, .failed(FailureReply(request: .play, code: .notInSession, message: "not in the playback session")))),
            ("device-state-updated", packet(0, .deviceStateUpdated(DeviceStateUpdate(deviceId: deviceId, reason: .nameChanged)))),
            ("error-occurred", packet(0, .errorOccurred(DeviceErrorEvent(deviceId: deviceId, code: .playbackInterrupted,
                                                                         message: "renamed while playing")))),
            ("playback-ended", packet(0, .playbackEnded(streamId: 7))),
            ("volume-changed", packet(0, .volumeChanged(VolumeChange(deviceId: deviceId, volume: try! SpeakerVolume(25), muted: false)))),
            ("playback-state-changed", packet(0, .playbackStateChanged(PlaybackStateChange(streamId: 7, state: .paused)))),
            ("playback-time", packet(0, .playbackTime(PlaybackTime(streamId: 7, elapsedMilliseconds: 15_000)))),
            ("resend-request", try! ControlPacket(requestId: 0, message: .resendRequest(try! ResendRequest(streamId: 7, sequences: [41, 42, 97])),
                                                  version: 2)),
            ("playback-paused", try! ControlPacket(requestId: 0, message: .playbackPaused(PausePosition(streamId: 7, nextFrame: 1_234_567)),
                                                   version: 5)),
        ]
    }

    /// Version 4: the §6 exchange of the `clock-sync` vectors as datagrams (docs §6.1).
    static var clock: [(name: String, datagram: ClockDatagram)] {
        [
            ("clock-request", .request(t1: 1_000_000_000)),
            ("clock-reply", .reply(try! ClockSyncReply(t1: 1_000_000_000, t2: 5_000_250_000, t3: 5_000_260_000))),
        ]
    }

    static var audio: [(name: String, packet: AudioPacket)] {
        let format = try! AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)
        return [
            ("audio", try! AudioPacket(streamId: 7, sequence: 0, firstFrame: 0, presentationTime: 1_100_000_000, format: format,
                                       pcm: [0x00, 0x01, 0x00, 0xFF, 0x10, 0x00, 0xF0, 0xFF])),
            ("audio-end", try! AudioPacket(streamId: 7, sequence: 1, firstFrame: 2, presentationTime: 1_100_041_666, format: format,
                                           endOfStream: true, pcm: [])),
            // Version 3: the first 16 frames of a stereo ramp (left 0, 100, 200, ..., right its negative) as FLAC.
            ("audio-flac", try! AudioPacket(streamId: 7, sequence: 0, firstFrame: 0, presentationTime: 1_100_000_000, format: format,
                                            encoding: .flac, pcm: (0..<16).flatMap { i -> [UInt8] in
                                                let l = Int16(i * 100), r = -l
                                                return [UInt8(truncatingIfNeeded: l), UInt8(truncatingIfNeeded: l >> 8),
                                                        UInt8(truncatingIfNeeded: r), UInt8(truncatingIfNeeded: r >> 8)]
                                            })),
        ]
    }

    static var discovery: [(name: String, message: DiscoveryMessage)] {
        [
            ("discovery-query", .query(queryId: 0x0000_2A01)),
            ("discovery-answer", .answer(try! DiscoveryAnswer(queryId: 0x0000_2A01, deviceId: deviceId, controlPort: 45455,
                                                              audioPort: 45456, protocolVersions: 1, 1, deviceName: "Adapt1",
                                                              modelName: "Omni Adapt"))),
        ]
    }

    /// Every example's bytes by vector name.
    static var vectors: [(name: String, bytes: [UInt8])] {
        control.map { ($0.name, $0.packet.encode()) } + clock.map { ($0.name, $0.datagram.encode()) }
            + audio.map { ($0.name, $0.packet.encode()) }
            + discovery.map { ($0.name, $0.message.encode()) }
    }
}

/// Parses "54 53 01" (any whitespace) into bytes; nil on anything else.
func bytes(hex: String) -> [UInt8]? {
    let digits = hex.filter { !$0.isWhitespace }
    guard digits.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        guard let b = UInt8(digits[i..<j], radix: 16) else { return nil }
        out.append(b)
        i = j
    }
    return out
}

/// The frame with its CRC recomputed after `edit` (for decoder checks past the CRC).
func reframed(_ bytes: [UInt8], _ edit: (inout [UInt8]) -> Void) -> [UInt8] {
    var body = Array(bytes.dropLast(4))
    edit(&body)
    let crc = CRC32.checksum(body)
    return body + [UInt8(crc >> 24), UInt8(truncatingIfNeeded: crc >> 16), UInt8(truncatingIfNeeded: crc >> 8), UInt8(truncatingIfNeeded: crc)]
}

/// The code `body` threw, or nil when it did not throw.
func thrownCode<T>(_ body: () throws(SpeakerError) -> T) -> SpeakerError.Code? {
    do {
        _ = try body()
        return nil
    } catch {
        return error.code
    }
}
