import ArgumentParser
import Foundation
import Glibc
import Speaker
import SpeakerPlayback
import Support

/// `tuneup-bench speaker-flac`: bytes on the wire and the controller's CPU cost of FLAC audio datagrams against PCM
/// (docs/speaker-protocol.md §7.2), for a music-like signal and for noise, in one run.
struct SpeakerFLACBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "speaker-flac",
        abstract: "Bytes on the wire per audio second and CPU per audio second of FLAC audio datagrams against PCM.",
        discussion: """
            Packs --seconds of 48 kHz s16le stereo into audio datagrams as the player does (StreamSchedule: 358 \
            frames a PCM packet, 353 a FLAC one) and decodes them as a speaker does, one thread, timed with \
            CLOCK_THREAD_CPUTIME_ID. Signals: 'music' (three tones and their harmonics under a slow envelope, with \
            noise 50 dB down: compressible as music is) and 'noise' (the tests' white noise at half scale: \
            incompressible, FLAC's worst case). Prints, per signal: datagrams and bytes (headers and CRC included) \
            per audio second, the FLAC/PCM ratio, and encode and decode CPU seconds per audio second.
            """)

    @Option(help: "Seconds of audio per signal.") var seconds = 60.0

    func validate() throws {
        guard seconds >= 1, seconds <= 3600 else { throw ValidationError("--seconds must be 1...3600") }
    }

    static let format = try! AudioFormat(sampleRate: 48_000, channels: 2, sampleFormat: .s16le)

    struct Figures: Sendable {
        var datagrams = 0
        var bytes = 0
        var encodeCPU = 0.0
        var decodeCPU = 0.0
    }

    func run() async throws {
        let seconds = self.seconds
        for signal in ["music", "noise"] {
            let pcm = try await Blocking.perform("signal") { Self.signal(signal, seconds: seconds) }
            let plain = try await Blocking.perform("pcm") { try Self.measure(pcm, encoding: .pcm) }
            let flac = try await Blocking.perform("flac") { try Self.measure(pcm, encoding: .flac) }
            func line(_ name: String, _ f: Figures) -> String {
                String(format: "  %@: %.1f datagrams/s, %.0f bytes/s (%.1f kbit/s); encode %.5f, decode %.5f CPU s per audio s",
                       name, Double(f.datagrams) / seconds, Double(f.bytes) / seconds, Double(f.bytes) * 8 / seconds / 1000,
                       f.encodeCPU / seconds, f.decodeCPU / seconds)
            }
            print("\(signal), \(seconds) s of 48 kHz s16le stereo:")
            print(line("pcm ", plain))
            print(line("flac", flac))
            print(String(format: "  flac/pcm bytes: %.3f", Double(flac.bytes) / Double(plain.bytes)))
        }
    }

    /// Packs `pcm` as the player does, then decodes every datagram as a speaker does.
    static func measure(_ pcm: [UInt8], encoding: AudioEncoding) throws -> Figures {
        var schedule = StreamSchedule(streamId: 1, format: format, encoding: encoding, startTime: 1_000_000_000)
        let step = schedule.framesPerPacket * format.bytesPerFrame
        var datagrams: [[UInt8]] = []
        var f = Figures()
        let start = threadCPU()
        var offset = 0
        while offset < pcm.count {
            let end = min(pcm.count, offset + step)
            let next = pcm[end..<min(pcm.count, end + format.bytesPerFrame)]
            let packet = try schedule.packet(pcm: Array(pcm[offset..<end]), endOfStream: end == pcm.count, next: next)
            datagrams.append(packet.encode())
            offset = end
        }
        f.encodeCPU = threadCPU() - start
        let decodeStart = threadCPU()
        var frames = 0
        for d in datagrams { frames += try AudioPacket.decode(d).frameCount }
        f.decodeCPU = threadCPU() - decodeStart
        guard frames * format.bytesPerFrame == pcm.count else { throw ValidationError("decoded \(frames) frames, packed \(pcm.count / 4)") }
        f.datagrams = datagrams.count
        f.bytes = datagrams.reduce(0) { $0 + $1.count }
        return f
    }

    static func threadCPU() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// `seconds` of 48 kHz stereo s16le.
    static func signal(_ kind: String, seconds: Double) -> [UInt8] {
        let frames = Int(seconds * 48_000)
        if kind == "noise" { return GeneratedSignal(format: format, seconds: seconds, seed: 3).frames(0, count: frames) }
        var out: [UInt8] = []
        out.reserveCapacity(frames * 4)
        var state: UInt64 = 0x1234_5678
        let notes: [Double] = [220, 277.18, 329.63]
        for i in 0..<frames {
            let t = Double(i) / 48_000
            // A chord whose notes swell and fade every 2 s, with two harmonics each, and a little noise.
            let envelope = 0.5 + 0.5 * sin(2 * .pi * t / 2)
            var left = 0.0, right = 0.0
            for (k, f) in notes.enumerated() {
                let v = sin(2 * .pi * f * t) + 0.5 * sin(2 * .pi * 2 * f * t) + 0.25 * sin(2 * .pi * 3 * f * t)
                left += v * (k == 2 ? 0.6 : 1)
                right += v * (k == 0 ? 0.6 : 1)
            }
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let noise = Double(Int64(bitPattern: state) >> 40) / Double(1 << 23) * 0.003
            for v in [left, right] {
                PCM.append(Int32((v * envelope * 0.12 + noise) * 32_767), .s16le, to: &out)
            }
        }
        return out
    }
}
