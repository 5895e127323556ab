import CSndfile
import Foundation
import Speaker
import Testing
import TestSupport

/// FLAC audio datagrams (docs/speaker-protocol.md §7.2): one frame each, lossless, within the datagram whatever the
/// audio, decodable alone, and real FLAC (libsndfile's FLAC reader, libFLAC behind it, reads them as a file).
@Suite struct FLACTests {
    static let formats: [AudioFormat] = [
        try! AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le),
        try! AudioFormat(sampleRate: 44_100, channels: 1, sampleFormat: .s16le),
        try! AudioFormat(sampleRate: 96_000, channels: 2, sampleFormat: .s24le),
        try! AudioFormat(sampleRate: 22_050, channels: 1, sampleFormat: .s24le),
        try! AudioFormat(sampleRate: 48_000, channels: 8, sampleFormat: .s24le),
    ]

    /// Interleaved PCM of `frames` frames: "silence", "noise" (full-scale white noise: incompressible) or "music"
    /// (three tones and a little noise).
    static func signal(_ kind: String, frames: Int, format: AudioFormat, seed: UInt64 = 1) -> [UInt8] {
        var rng = TestRandom(seed: seed)
        let bits = format.sampleFormat.bitsPerSample
        let full = Int32((1 << (bits - 1)) - 1)
        var out: [UInt8] = []
        out.reserveCapacity(frames * format.bytesPerFrame)
        for i in 0..<frames {
            for c in 0..<Int(format.channels) {
                let v: Int32
                switch kind {
                case "silence": v = 0
                case "noise": v = Int32(truncatingIfNeeded: Int64(rng.next() >> 32) & ((1 << bits) - 1)) - (full + 1)
                default:
                    let t = Double(i) / Double(format.sampleRate)
                    let tone = 0.3 * sin(2 * .pi * 440 * t + Double(c)) + 0.2 * sin(2 * .pi * 660 * t) + 0.1 * sin(2 * .pi * 1_320 * t)
                    v = Int32(tone * Double(full)) + Int32(truncatingIfNeeded: Int64(rng.next() % 64)) - 32
                }
                let u = UInt32(bitPattern: v)
                out.append(UInt8(truncatingIfNeeded: u))
                out.append(UInt8(truncatingIfNeeded: u >> 8))
                if bits == 24 { out.append(UInt8(truncatingIfNeeded: u >> 16)) }
            }
        }
        return out
    }

    static func code(_ body: () throws(SpeakerError) -> some Any) -> SpeakerError.Code? { thrownCode(body) }

    @Test func packetSizesFollowTheVerbatimBound() throws {
        // 18 + ⌈channels × (8 + frames × bits) / 8⌉ ≤ 1432: the most frames, and one more does not fit.
        let expected: [(AudioFormat, Int)] = [
            (Self.formats[0], 353), (Self.formats[1], 706), (Self.formats[2], 235), (Self.formats[3], 471), (Self.formats[4], 58),
        ]
        for (format, frames) in expected {
            #expect(AudioPacket.maxFrames(for: format, encoding: .flac) == frames, "\(format)")
            #expect(FLACFrame.maxSize(frames: frames, format: format) <= AudioPacket.maxPCMBytes, "\(format)")
            #expect(FLACFrame.maxSize(frames: frames + 1, format: format) > AudioPacket.maxPCMBytes, "\(format)")
        }
        #expect(AudioPacket.maxFrames(for: Self.formats[0], encoding: .pcm) == 358)
    }

    @Test func framesRoundTripExactlyAndFitTheDatagram() throws {
        for format in Self.formats {
            let most = AudioPacket.maxFrames(for: format, encoding: .flac)
            for kind in ["silence", "noise", "music"] {
                for frames in [1, 2, 15, 16, 17, 100, most - 1, most] where frames <= most {
                    let pcm = Self.signal(kind, frames: frames, format: format, seed: UInt64(frames))
                    let packet = try AudioPacket(streamId: 9, sequence: 4, firstFrame: 1_000, presentationTime: 2_000_000_000,
                                                 format: format, encoding: .flac, pcm: pcm)
                    let bytes = packet.encode()
                    #expect(bytes.count <= AudioPacket.maxDatagramSize, "\(kind) \(frames) \(format)")
                    #expect(packet.payload.count <= FLACFrame.maxSize(frames: frames, format: format))
                    #expect(bytes[2] == 3 && bytes[3] == 0x02, "a version-3 datagram with the FLAC flag")
                    let decoded = try AudioPacket.decode(bytes)
                    #expect(decoded.pcm == pcm, "\(kind) \(frames) frames, \(format): not lossless")
                    #expect(decoded == packet && decoded.encoding == .flac && decoded.frameCount == frames)
                    if kind == "silence", frames >= 16 { #expect(bytes.count <= AudioPacket.overhead + 20 + 4 * Int(format.channels), "silence: constant subframes") }
                }
            }
        }
        // Too many frames for one FLAC datagram is refused, as for PCM.
        let format = Self.formats[0]
        #expect(Self.code { () throws(SpeakerError) in
            try AudioPacket(streamId: 1, sequence: 0, firstFrame: 0, presentationTime: 0, format: format, encoding: .flac,
                            pcm: Self.signal("music", frames: 354, format: format))
        } == .tooLarge)
    }

    @Test func endOfStreamWithoutFrames() throws {
        let packet = try AudioPacket(streamId: 9, sequence: 4, firstFrame: 1_000, presentationTime: 0, format: Self.formats[0],
                                     endOfStream: true, encoding: .flac, pcm: [])
        #expect(packet.encode().count == AudioPacket.overhead)
        #expect(try AudioPacket.decode(packet.encode()) == packet)
    }

    @Test func damagedFramesAreADecodeErrorNotATrap() throws {
        let format = Self.formats[0]
        let pcm = Self.signal("music", frames: 300, format: format)
        let good = try AudioPacket(streamId: 9, sequence: 4, firstFrame: 0, presentationTime: 0, format: format, encoding: .flac, pcm: pcm).encode()
        let frameStart = AudioPacket.headerSize
        let frameLength = good.count - AudioPacket.overhead
        // Every cut of the FLAC frame (the datagram's CRC made right again): not a whole frame.
        for cut in stride(from: 1, to: frameLength, by: 7) {
            let bytes = reframed(good) { $0.removeLast(cut) }
            #expect(AudioPacket.decodeCode(bytes) == .badAudio, "cut by \(cut)")
        }
        // A flipped bit anywhere in the frame: its CRC-8 or CRC-16 (or the header's fields) catch it.
        var rng = TestRandom(seed: 3)
        for _ in 0..<200 {
            let at = frameStart + Int(rng.next() % UInt64(frameLength))
            let bit = UInt8(1 << (rng.next() % 8))
            let bytes = reframed(good) { $0[at] ^= bit }
            #expect(AudioPacket.decodeCode(bytes) == .badAudio, "bit \(bit) of byte \(at)")
        }
        // Garbage, a frame with bytes after it, two frames, another frame count, a PCM payload flagged FLAC.
        let garbage = (0..<500).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        #expect(AudioPacket.decodeCode(reframed(good) { $0.replaceSubrange(frameStart..., with: garbage) }) == .badAudio)
        #expect(AudioPacket.decodeCode(reframed(good) { $0 += [0, 0, 0] }) == .badAudio)
        let frame = Array(good[frameStart..<(good.count - 4)])
        let small = try AudioPacket(streamId: 9, sequence: 4, firstFrame: 0, presentationTime: 0, format: format, encoding: .flac,
                                    pcm: Self.signal("music", frames: 20, format: format)).encode()
        #expect(AudioPacket.decodeCode(reframed(small) { $0 += frame }) == .badAudio)
        #expect(AudioPacket.decodeCode(reframed(good) { $0[34] = 0; $0[35] = 200 }) == .badAudio)  // 200 frames, not 300
        #expect(AudioPacket.decodeCode(reframed(good) { $0[34] = 0x01; $0[35] = 0x62 }) == .valueOutOfRange)  // 354 > 353
        #expect(AudioPacket.decodeCode(reframed(good) { $0[34] = 0; $0[35] = 0 }) == .trailingBytes)  // 0 frames, a frame
        let pcmPacket = try AudioPacket(streamId: 9, sequence: 4, firstFrame: 0, presentationTime: 0, format: format, pcm: pcm).encode()
        #expect(AudioPacket.decodeCode(reframed(pcmPacket) { $0[2] = 3; $0[3] = 0x02 }) == .badAudio)
        // The flag is version 3's: in a version-1 datagram it is undefined; a version-3 PCM datagram is read as PCM.
        #expect(AudioPacket.decodeCode(reframed(good) { $0[2] = 1 }) == .valueOutOfRange)
        #expect(try AudioPacket.decode(reframed(pcmPacket) { $0[2] = 3 }).pcm == pcm)
        #expect(AudioPacket.decodeCode(reframed(pcmPacket) { $0[2] = 2 }) == .unsupportedVersion)
        #expect(AudioPacket.decodeCode(reframed(good) { $0[3] = 0x06 }) == .valueOutOfRange)
    }

    /// A thread's decoder is kept from one frame to the next (libFLAC's set-up once per thread): after every kind of
    /// damaged frame, and after frames of other formats, the next good frame decodes exactly — nothing of a frame,
    /// or of its failure, reaches the next. One thread (a synchronous loop), as a receiver's sound-card thread.
    @Test func aDecoderKeptAcrossFramesCarriesNothingFromOneToTheNext() throws {
        let packets = try Self.formats.enumerated().map { k, format in
            let pcm = Self.signal(k % 2 == 0 ? "music" : "noise", frames: 1392 / format.bytesPerFrame - 3 * k, format: format, seed: UInt64(k + 1))
            return (pcm, try AudioPacket(streamId: 1, sequence: UInt32(k), firstFrame: 0, presentationTime: 0, format: format,
                                         encoding: .flac, pcm: pcm).encode())
        }
        var rng = TestRandom(seed: 11)
        for round in 0..<60 {
            let (pcm, good) = packets[round % packets.count]
            let frameLength = good.count - AudioPacket.overhead
            switch round % 4 {
            case 0: _ = AudioPacket.decodeCode(reframed(good) { $0.removeLast(1 + Int(rng.next() % UInt64(frameLength - 1))) })
            case 1: _ = AudioPacket.decodeCode(reframed(good) { $0[AudioPacket.headerSize + Int(rng.next() % UInt64(frameLength))] ^= 0x10 })
            case 2: _ = AudioPacket.decodeCode(reframed(good) { $0 += [0, 0, 0] })
            default: break
            }
            #expect(try AudioPacket.decode(good).pcm == pcm, "round \(round)")
        }
    }

    @Test func aRateTheFrameHeaderCannotStateIsRefused() throws {
        let format = try AudioFormat(sampleRate: 88_201, channels: 2, sampleFormat: .s16le)
        #expect(!AudioEncoding.flac.carries(format) && AudioEncoding.pcm.carries(format))
        #expect(AudioEncoding.flac.carries(try AudioFormat(sampleRate: 192_000, channels: 2, sampleFormat: .s24le)))
        #expect(Self.code { () throws(SpeakerError) in
            try AudioPacket(streamId: 1, sequence: 0, firstFrame: 0, presentationTime: 0, format: format, encoding: .flac,
                            pcm: Self.signal("music", frames: 10, format: format))
        } == .valueOutOfRange)
    }

    /// A stream's encoder (the player's: set up once per stream) writes frames that each decode alone, every packet
    /// given with the next packet's first frame; one without it ends the stream.
    @Test func aStreamEncodersFramesDecodeAlone() throws {
        for format in [Self.formats[0], Self.formats[2], Self.formats[4]] {
            let frames = AudioPacket.maxFrames(for: format, encoding: .flac)
            let bpf = format.bytesPerFrame
            for kind in ["music", "noise", "silence"] {
                let pcm = Self.signal(kind, frames: frames * 6 + 29, format: format)
                let encoder = try FLACStreamEncoder(format: format, frames: frames)
                var offset = 0
                while offset < pcm.count {
                    let end = min(pcm.count, offset + frames * bpf)
                    let next = pcm[end..<min(pcm.count, end + bpf)]
                    let frame = try encoder.encode(Array(pcm[offset..<end]), next: next)
                    #expect(frame.count <= FLACFrame.maxSize(frames: (end - offset) / bpf, format: format))
                    #expect(try FLACFrame.decode(frame[...], frames: (end - offset) / bpf, format: format) == Array(pcm[offset..<end]),
                            "\(kind) \(format) packet at \(offset / bpf)")
                    offset = end
                }
                #expect(encoder.isFinished)
                #expect(Self.code { () throws(SpeakerError) in try encoder.encode(Array(pcm.prefix(bpf)), next: []) } == .valueOutOfRange)
            }
        }
    }

    /// The datagrams' frames, after a STREAMINFO, are a .flac file that libsndfile (libFLAC's file decoder, checking
    /// every frame's CRC) reads back to the source, sample for sample.
    @Test(arguments: [0, 2]) func aFLACDecoderReadsTheFramesAsAFile(formatIndex: Int) throws {
        let format = Self.formats[formatIndex]
        let frames = AudioPacket.maxFrames(for: format, encoding: .flac)
        let pcm = Self.signal("music", frames: frames * 40 + 77, format: format)
        var file: [UInt8] = Array("fLaC".utf8)
        var stream: [UInt8] = []
        var offset = 0, sequence: UInt32 = 0
        let encoder = try FLACStreamEncoder(format: format, frames: frames)
        while offset < pcm.count {
            let chunk = Array(pcm[offset..<min(pcm.count, offset + frames * format.bytesPerFrame)])
            // The player's way: the stream's encoder, each packet with the next one's first frame (frame numbers
            // count up, as in any FLAC file).
            let next = pcm[(offset + chunk.count)..<min(pcm.count, offset + chunk.count + format.bytesPerFrame)]
            let packet = try AudioPacket(streamId: 1, sequence: sequence, firstFrame: UInt64(offset / format.bytesPerFrame),
                                         presentationTime: 0, format: format, pcm: chunk,
                                         flacFrame: encoder.encode(chunk, next: next))
            let datagram = packet.encode()
            stream += datagram[AudioPacket.headerSize..<(datagram.count - 4)]
            offset += chunk.count
            sequence += 1
        }
        file += streamInfo(format: format, blockSize: frames, totalFrames: pcm.count / format.bytesPerFrame)
        file += stream
        let decoded = try readWithSndfile(file)
        #expect(decoded.rate == Int(format.sampleRate) && decoded.channels == Int(format.channels))
        let bits = format.sampleFormat.bitsPerSample
        let expected = decodeSamples(pcm, bits: bits)
        #expect(decoded.samples.count == expected.count)
        #expect(decoded.samples == expected, "libsndfile read other samples")
    }

    // MARK: Helpers

    func decodeSamples(_ pcm: [UInt8], bits: Int) -> [Int32] {
        let width = bits / 8
        return stride(from: 0, to: pcm.count, by: width).map { i in
            var u: UInt32 = 0
            for b in 0..<width { u |= UInt32(pcm[i + b]) << (8 * b) }
            return Int32(bitPattern: u << (32 - UInt32(bits))) >> (32 - Int32(bits))
        }
    }

    /// The last (and only) metadata block: STREAMINFO (34 bytes), frame sizes and MD5 unknown.
    func streamInfo(format: AudioFormat, blockSize: Int, totalFrames: Int) -> [UInt8] {
        var b: [UInt8] = [0x80, 0, 0, 34]
        b += [UInt8(blockSize >> 8), UInt8(blockSize & 0xFF), UInt8(blockSize >> 8), UInt8(blockSize & 0xFF)]
        b += [0, 0, 0, 0, 0, 0]
        // rate 20 bits, channels − 1 3 bits, bits − 1 5 bits, total samples 36 bits.
        var v = UInt64(format.sampleRate) << 44 | UInt64(format.channels - 1) << 41
        v |= UInt64(format.sampleFormat.bitsPerSample - 1) << 36 | UInt64(totalFrames)
        for shift in stride(from: 56, through: 0, by: -8) { b.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
        b += [UInt8](repeating: 0, count: 16)
        return b
    }

    final class Memory {
        let bytes: [UInt8]
        var position = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
    }

    func readWithSndfile(_ file: [UInt8]) throws -> (rate: Int, channels: Int, samples: [Int32]) {
        if let reason = tuneup_sndfile_load() { throw TestFailure(String(cString: reason)) }
        let memory = Memory(file)
        var io = SF_VIRTUAL_IO(
            get_filelen: { user in sf_count_t(Unmanaged<Memory>.fromOpaque(user!).takeUnretainedValue().bytes.count) },
            seek: { offset, whence, user in
                let m = Unmanaged<Memory>.fromOpaque(user!).takeUnretainedValue()
                switch whence {
                case SEEK_SET: m.position = Int(offset)
                case SEEK_CUR: m.position += Int(offset)
                default: m.position = m.bytes.count + Int(offset)
                }
                return sf_count_t(m.position)
            },
            read: { pointer, count, user in
                let m = Unmanaged<Memory>.fromOpaque(user!).takeUnretainedValue()
                let n = max(0, min(Int(count), m.bytes.count - m.position))
                m.bytes.withUnsafeBytes { pointer!.copyMemory(from: $0.baseAddress! + m.position, byteCount: n) }
                m.position += n
                return sf_count_t(n)
            },
            write: { _, _, _ in 0 },
            tell: { user in sf_count_t(Unmanaged<Memory>.fromOpaque(user!).takeUnretainedValue().position) })
        var info = SF_INFO()
        let handle = withExtendedLifetime(memory) {
            sf_open_virtual(&io, Int32(SFM_READ), &info, Unmanaged.passUnretained(memory).toOpaque())
        }
        guard let handle else { throw TestFailure("libsndfile: \(String(cString: sf_strerror(nil)))") }
        defer { sf_close(handle) }
        #expect(info.format & Int32(SF_FORMAT_TYPEMASK) == Int32(SF_FORMAT_FLAC))
        // The samples as they are (not scaled to ±1): whole numbers, exact in a double.
        _ = sf_command(handle, Int32(SFC_SET_NORM_DOUBLE), nil, Int32(SF_FALSE))
        var samples = [Double](repeating: 0, count: Int(info.frames) * Int(info.channels))
        let read = withExtendedLifetime(memory) { sf_readf_double(handle, &samples, info.frames) }
        #expect(read == info.frames)
        return (Int(info.samplerate), Int(info.channels), samples.map { Int32($0) })
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension AudioPacket {
    static func decodeCode(_ bytes: [UInt8]) -> SpeakerError.Code? {
        thrownCode { () throws(SpeakerError) in try AudioPacket.decode(bytes) }
    }
}
