// The checks the Speaker fuzzer makes on every input, shared by the fuzzer (tools/fuzz/speaker/run.sh compiles this
// file together with Sources/Failure, Sources/Speaker and tools/fuzz/speaker/FuzzSpeaker.swift) and by
// FuzzRegressionTests, which replays every kept input through it on a normal `swift test`. In the fuzzer build
// Speaker is not a module.
#if canImport(Speaker)
import Speaker
#endif

/// What replaying one input gave, and every invariant it broke.
struct SpeakerReplay {
    /// The deframer's outputs (fed in chunks).
    var outputs: [ControlDeframer.Output] = []
    /// The frames that decoded to packets.
    var packets: [ControlPacket] = []
    /// The deframer after the whole input, for further checks (recovery).
    var deframer = ControlDeframer()
    /// Broken invariants, in words; empty when the codec behaved.
    var problems: [String] = []
}

/// Replays `bytes` through every decoder:
/// - the control deframer, fed in chunks of `first byte % 64 + 1` bytes, and a second one fed everything at once:
///   both give the same outputs and statistics; after each chunk at most one maximal frame plus the chunk is
///   buffered; every byte is in a frame, skipped or still buffered;
/// - every deframed frame re-encodes to its bytes; one that decodes to a `ControlPacket` re-encodes byte for byte;
/// - the whole input as one control frame, one audio datagram and one discovery datagram, as is and with its last 4
///   bytes replaced by its CRC-32, and as a bare message (first byte the type, the rest the payload): a success
///   re-encodes to the input, a failure is a one-line message.
/// A trap is not caught: it ends the run, which is the failure.
func replaySpeakerInput(_ bytes: [UInt8]) -> SpeakerReplay {
    var result = SpeakerReplay()
    let chunkSize = Int(bytes.first ?? 1) % 64 + 1
    var i = 0
    while i < bytes.count {
        result.deframer.append(bytes[i..<min(bytes.count, i + chunkSize)])
        while let output = result.deframer.next() { result.outputs.append(output) }
        if result.deframer.bufferedByteCount > ControlFrame.maxFrameSize + chunkSize {
            result.problems.append("deframer holds \(result.deframer.bufferedByteCount) bytes after a \(chunkSize)-byte chunk")
        }
        i += chunkSize
    }
    var whole = ControlDeframer()
    whole.append(bytes)
    var wholeOutputs: [ControlDeframer.Output] = []
    while let output = whole.next() { wholeOutputs.append(output) }
    if wholeOutputs != result.outputs || whole.statistics != result.deframer.statistics {
        result.problems.append("chunked and whole input deframe differently: \(result.outputs.count) vs \(wholeOutputs.count) outputs")
    }
    var frameBytes = 0
    for output in result.outputs {
        switch output {
        case .frame(let frame):
            let encoded = frame.encode()
            frameBytes += encoded.count
            if (try? ControlFrame.decode(encoded)) != frame { result.problems.append("a deframed frame does not re-encode") }
            do {
                let packet = try ControlPacket(frame: frame)
                result.packets.append(packet)
                if packet.encode() != encoded { result.problems.append("packet \(packet.message.type) does not re-encode byte for byte") }
            } catch {
                checkLine(error, "control packet", &result.problems)
            }
        case .rejected(let error):
            checkLine(error, "deframer rejection", &result.problems)
        }
    }
    let stats = result.deframer.statistics
    if frameBytes + stats.discardedBytes + result.deframer.bufferedByteCount != bytes.count {
        result.problems.append("bytes unaccounted for: \(frameBytes) in frames, \(stats.discardedBytes) skipped, \(result.deframer.bufferedByteCount) buffered of \(bytes.count)")
    }
    if stats.frames != result.outputs.filter({ if case .frame = $0 { true } else { false } }).count {
        result.problems.append("frame count statistic disagrees with the outputs")
    }
    do {
        let packet = try ControlPacket.decode(bytes)
        if packet.encode() != bytes { result.problems.append("control packet decoded from the whole input re-encodes differently") }
    } catch {
        checkLine(error, "control packet", &result.problems)
    }
    do {
        let packet = try AudioPacket.decode(bytes)
        if packet.encode() != bytes { result.problems.append("audio packet re-encodes differently") }
    } catch {
        checkLine(error, "audio packet", &result.problems)
    }
    do {
        let message = try DiscoveryMessage.decode(bytes)
        if message.encode() != bytes { result.problems.append("discovery datagram re-encodes differently") }
    } catch {
        checkLine(error, "discovery datagram", &result.problems)
    }
    do {
        let datagram = try ClockDatagram.decode(bytes)
        if datagram.encode() != bytes { result.problems.append("clock-sync datagram re-encodes differently") }
    } catch {
        checkLine(error, "clock-sync datagram", &result.problems)
    }
    // Past the CRC: libFuzzer rarely hits a right CRC, so the payload and datagram decoders are also fed the input
    // directly (first byte as the message type, the rest as its payload) and with its last 4 bytes made its CRC.
    if let type = bytes.first {
        let payload = bytes.dropFirst()
        do {
            let message = try ControlMessage.decode(type: type, payload: payload)
            if message.type != type || message.encodePayload() != Array(payload) {
                result.problems.append("message \(type) decoded from a bare payload re-encodes differently")
            }
        } catch {
            checkLine(error, "bare payload", &result.problems)
        }
    }
    if bytes.count >= 4 {
        var fixed = Array(bytes.dropLast(4))
        let crc = CRC32.checksum(fixed)
        fixed += [UInt8(crc >> 24), UInt8(truncatingIfNeeded: crc >> 16), UInt8(truncatingIfNeeded: crc >> 8), UInt8(truncatingIfNeeded: crc)]
        do {
            let packet = try ControlPacket.decode(fixed)
            if packet.encode() != fixed { result.problems.append("control packet with a fixed CRC re-encodes differently") }
        } catch {
            checkLine(error, "control packet (fixed CRC)", &result.problems)
        }
        do {
            let packet = try AudioPacket.decode(fixed)
            if packet.encode() != fixed { result.problems.append("audio packet with a fixed CRC re-encodes differently") }
        } catch {
            checkLine(error, "audio packet (fixed CRC)", &result.problems)
        }
        do {
            let message = try DiscoveryMessage.decode(fixed)
            if message.encode() != fixed { result.problems.append("discovery datagram with a fixed CRC re-encodes differently") }
        } catch {
            checkLine(error, "discovery datagram (fixed CRC)", &result.problems)
        }
        do {
            let datagram = try ClockDatagram.decode(fixed)
            if datagram.encode() != fixed { result.problems.append("clock-sync datagram with a fixed CRC re-encodes differently") }
        } catch {
            checkLine(error, "clock-sync datagram (fixed CRC)", &result.problems)
        }
    }
    return result
}

private func checkLine(_ error: SpeakerError, _ what: String, _ problems: inout [String]) {
    if error.message.isEmpty || error.message.contains("\n") || error.codeName.isEmpty {
        problems.append("\(what) error is not one line with a code: \(error.codeName) \(error.message)")
    }
}
