import AudioInput
import CSndfile
import Foundation
import Speaker
import Testing
import TestSupport

/// `AudioInputSource`, the speakers' playback source over AudioInput: the source's own format, every frame in order,
/// exact seeks, and refusals before anything plays.
@Suite struct AudioInputSourceTests {
    @Test func aFLACFilePlaysAtItsOwnRateFrameForFrameAndSeeksExactly() async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/song.flac"
        let rate = 48_000
        let signal = Fixtures.music(frames: rate / 2, rate: rate)  // stereo, half a second
        try Fixtures.write(path, format: Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16), rate: rate, channels: 2, samples: signal)
        let source = try await AudioInputSource.open(.file(path))
        defer { Task { await source.close() } }
        #expect(source.format == Fixtures.format(rate: rate, channels: 2))
        #expect(source.totalFrames == UInt64(rate / 2))
        #expect(source.isSeekable)

        var bytes: [UInt8] = []
        while true {
            let chunk = try await source.read(maxFrames: 1000)
            if chunk.isEmpty { break }
            #expect(chunk.count % source.format.bytesPerFrame == 0)
            bytes += chunk
        }
        #expect(Fixtures.difference(Self.samples(bytes), signal) == nil, "every frame, in order, sample-exact")

        for frame in [UInt64(0), 1, 12_345, 23_999] {
            try await source.seek(toFrame: frame)
            let chunk = try await source.read(maxFrames: 4)
            #expect(Array(Self.samples(chunk).prefix(2)) == Array(signal[Int(frame) * 2..<Int(frame) * 2 + 2]), "seek to \(frame)")
        }
    }

    @Test func aTwentyFourBitSourcePlaysAtTwentyFourBitsAndMonoStaysMono() async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/deep.wav"
        let values: [Int32] = (0..<8_000).map { Int32(($0 % 500) * 20_000) }
        try Fixtures.write24(path, format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_24), rate: 96_000, channels: 1, samples: values.map { $0 << 8 })
        let source = try await AudioInputSource.open(.file(path))
        #expect(source.format == Fixtures.format(rate: 96_000, channels: 1, .s24le))
        await source.close()
    }

    @Test func aSourceThatIsNotAudioIsRefusedAtOpen() async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/notes.mp3"
        try Data("these are not audio frames\n".utf8).write(to: URL(fileURLWithPath: path))
        do {
            _ = try await AudioInputSource.open(.file(path))
            Issue.record("a text file opened as audio")
        } catch {
            #expect(error.message.contains("notes.mp3"), "\(error.message)")
            #expect(!error.message.contains("\n"))
        }
    }

    static func samples(_ bytes: [UInt8]) -> [Int16] {
        stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
    }
}
