import AudioInput
import Foundation
import Speaker
import Testing
import TestSupport

/// Headerless PCM (`--raw FORMAT:RATE:CHANNELS`): its spelling, and libsndfile told the layout instead of sniffing it.
@Suite struct RawPCMTests {
    @Test func spellingsAreReadOrRefusedWithOneLine() throws {
        let ok = try RawPCMFormat("s16le:48000:2")
        #expect(ok.encoding == .s16le && ok.sampleRate == 48_000 && ok.channels == 2 && ok.bytesPerFrame == 4)
        #expect(try RawPCMFormat("S24LE:44100:1").bytesPerFrame == 3)
        #expect(try RawPCMFormat("f32le:8000:8").description == "f32le:8000:8")
        let bad: [(String, String)] = [
            ("s16le:48000", "FORMAT:RATE:CHANNELS"), ("", "FORMAT:RATE:CHANNELS"), ("a:b:c:d", "FORMAT:RATE:CHANNELS"),
            ("u8:48000:2", "s16le, s24le, s32le, f32le"), ("s16be:48000:2", "sample format"),
            ("s16le:7999:2", "8000...192000"), ("s16le:x:2", "rate"), ("s16le:192001:2", "rate"),
            ("s16le:48000:0", "1...8"), ("s16le:48000:9", "channels"), ("s16le:48000:-1", "channels"),
        ]
        for (text, says) in bad {
            let e = #expect(throws: AudioInputError.self) { try RawPCMFormat(text) }
            #expect(e?.code == .badOption && e?.message.contains(says) == true && e?.message.contains("\n") == false, "\(text): \(e?.message ?? "")")
        }
    }

    /// Writes `bytes` to a fresh file (off the cooperative pool) and decodes it as `raw` into `output`.
    static func decode(_ bytes: [UInt8], raw: String, output: AudioFormat) async throws -> [Int32] {
        let path = try await offThePool { () -> String in
            let path = try Fixtures.directory() + "/pipe.raw"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }
        let stream = try await AudioInput.open(.file(path), output: output, options: AudioInputOptions(raw: try RawPCMFormat(raw)))
        #expect(stream.source.sampleRate == Int(output.sampleRate) && stream.source.channels == Int(output.channels))
        return try await Fixtures.readAll(stream)
    }

    @Test func s16leAndS24leAreExactAndF32leIsScaled() async throws {
        let frames = 4800
        var s16: [UInt8] = [], s24: [UInt8] = [], f32: [UInt8] = []
        var expected16: [Int32] = [], expected24: [Int32] = []
        for i in 0..<frames * 2 {
            let v = Int32((i * 7919) % 60_000) - 30_000
            withUnsafeBytes(of: Int16(v).littleEndian) { s16 += $0 }
            expected16.append(v)
            let w = v * 256 + Int32(i % 256)
            s24 += [UInt8(truncatingIfNeeded: w), UInt8(truncatingIfNeeded: w >> 8), UInt8(truncatingIfNeeded: w >> 16)]
            expected24.append(w)
            withUnsafeBytes(of: (Float(v) / 32768).bitPattern.littleEndian) { f32 += $0 }
        }
        let out16 = Fixtures.format(rate: 48_000, channels: 2)
        let out24 = Fixtures.format(rate: 48_000, channels: 2, .s24le)
        #expect(Fixtures.difference(try await Self.decode(s16, raw: "s16le:48000:2", output: out16), expected16) == nil)
        #expect(Fixtures.difference(try await Self.decode(s24, raw: "s24le:48000:2", output: out24), expected24) == nil)
        let fromFloat = try await Self.decode(f32, raw: "f32le:48000:2", output: out16)
        #expect(fromFloat.count == expected16.count)
        #expect(zip(fromFloat, expected16).allSatisfy { abs($0 - $1) <= 1 }, "f32le: not the 16-bit values within 1")
    }
}
