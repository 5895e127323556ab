import AudioInput
import CSndfile
import Foundation
import Speaker
import Testing
import TestSupport

/// Local files in every format the issue names, written by libsndfile with a known signal and decoded back.
@Suite struct FileDecodingTests {
    static let rate = 44_100
    static let frames = 44_100  // one second

    @Test(arguments: Fixtures.formats.filter(\.lossless).map(\.ext))
    func losslessFormatsDecodeSampleExact(ext: String) async throws {
        let spec = Fixtures.formats.first { $0.ext == ext }!
        let dir = try Fixtures.directory()
        let path = "\(dir)/tone.\(ext)"
        let signal = Fixtures.music(frames: Self.frames, rate: Self.rate)
        try Fixtures.write(path, format: spec.format, rate: Self.rate, channels: 2, samples: signal)
        let stream = try await AudioInput.open(.file(path), output: .cd)
        #expect(stream.source.container == spec.name)
        #expect(stream.source.encoding == "16-bit PCM")
        #expect(stream.source.sampleRate == Self.rate && stream.source.channels == 2)
        #expect(stream.source.frames == Int64(Self.frames))
        #expect(stream.source.duration == .seconds(1))
        #expect(stream.source.title == "tone.\(ext)")
        let decoded = try await Fixtures.readAll(stream, maxFrames: 1000)
        #expect(decoded.count == signal.count)
        #expect(Fixtures.difference(decoded, signal.map(Int32.init)) == nil, "\(ext) is not sample-exact")
    }

    @Test func twentyFourBitWAVIsExactAtS24() async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/deep.wav"
        // 24-bit values, left-aligned in 32 bits as libsndfile's int API wants them.
        let values: [Int32] = (0..<20_000).map { i in Int32((Double(i % 997) / 997 - 0.5) * 16_000_000) }
        try Fixtures.write24(path, format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_24), rate: 48_000, channels: 1, samples: values.map { $0 << 8 })
        let stream = try await AudioInput.open(.file(path), output: Fixtures.format(rate: 48_000, channels: 1, .s24le))
        #expect(stream.source.encoding == "24-bit PCM")
        let decoded = try await Fixtures.readAll(stream)
        #expect(Fixtures.difference(decoded, values) == nil)
    }

    @Test(arguments: Fixtures.formats.filter { !$0.lossless }.map(\.ext))
    func lossyFormatsMatchTheSignal(ext: String) async throws {
        let spec = Fixtures.formats.first { $0.ext == ext }!
        let rate = ext == "opus" ? 48_000 : Self.rate
        let dir = try Fixtures.directory()
        let path = "\(dir)/tone.\(ext)"
        let signal = Fixtures.music(frames: rate, rate: rate)
        try Fixtures.write(path, format: spec.format, rate: rate, channels: 2, samples: signal)
        let stream = try await AudioInput.open(.file(path), output: Fixtures.format(rate: rate, channels: 2))
        #expect(stream.source.container == spec.name)
        #expect(stream.source.encoding == ["ogg": "Vorbis", "opus": "Opus", "mp3": "MPEG layer III"][ext])
        let decoded = try await Fixtures.readAll(stream)
        // The codecs keep the length (gapless MP3, Opus pre-skip) to within a frame of 1152 samples.
        #expect(abs(decoded.count / 2 - rate) <= 1152, "\(ext): \(decoded.count / 2) frames for \(rate)")
        let original = signal.map(Int32.init)
        for c in 0..<2 {
            let (db, lag) = Signal.snr(reference: Signal.channel(original, c, of: 2), decoded: Signal.channel(decoded, c, of: 2),
                                       skip: 2048, maxLag: 8)
            #expect(db > 25, "\(ext) channel \(c): SNR \(db) dB at lag \(lag)")
            #expect(lag == 0, "\(ext) channel \(c): the decoded signal is shifted by \(lag) frames")
        }
    }

    @Test func decodingIsDeterministic() async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/tone.mp3"
        try Fixtures.write(path, format: Int32(SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III), rate: Self.rate, channels: 2,
                           samples: Fixtures.music(frames: Self.rate, rate: Self.rate))
        let output = Fixtures.format(rate: 48_000, channels: 2)
        let first = try await Fixtures.readAll(try await AudioInput.open(.file(path), output: output), maxFrames: 700)
        let second = try await Fixtures.readAll(try await AudioInput.open(.file(path), output: output), maxFrames: 4096)
        #expect(Fixtures.difference(first, second) == nil)
    }

    @Test func resamplingKeepsFrequencyAndLevel() async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/k.wav"
        let seconds = 2
        let mono = (0..<(Self.rate * seconds)).map { Int16((0.5 * sin(2 * .pi * 1000 * Double($0) / Double(Self.rate)) * 32767).rounded()) }
        try Fixtures.write(path, format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), rate: Self.rate, channels: 1, samples: mono)
        let stream = try await AudioInput.open(.file(path), output: Fixtures.format(rate: 48_000, channels: 2))
        let out = try await Fixtures.readAll(stream)
        #expect(abs(out.count / 2 - 48_000 * seconds) <= 2, "\(out.count / 2) frames")
        let left = Array(Signal.channel(out, 0, of: 2)[4800..<(out.count / 2 - 4800)])
        let right = Array(Signal.channel(out, 1, of: 2)[4800..<(out.count / 2 - 4800)])
        #expect(Fixtures.difference(left, right) == nil, "mono goes to both channels alike")
        // The level stays (0.5 peak → RMS 0.3536) and the energy sits at 1 kHz, not at the neighbouring bins.
        #expect(abs(20 * log10(Signal.rms(left) / (0.5 / 2.0.squareRoot()))) < 0.05)
        let atTone = Signal.power(left, at: 1000, rate: 48_000)
        #expect(abs(atTone - 0.125) < 0.005, "power at 1 kHz \(atTone)")
        #expect(Signal.power(left, at: 1000 * 48_000 / 44_100, rate: 48_000) < atTone / 1000)
        #expect(Signal.power(left, at: 1000 * 44_100 / 48_000, rate: 48_000) < atTone / 1000)
    }

    @Test(arguments: ["wav", "flac"])
    func startAtSeeksToTheFrame(ext: String) async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/count.\(ext)"
        // Every sample tells its own frame index.
        let counter = (0..<24_000).map { Int16(truncatingIfNeeded: $0 - 12_000) }
        let spec = Fixtures.formats.first { $0.ext == ext }!
        try Fixtures.write(path, format: spec.format, rate: 8000, channels: 1, samples: counter)
        let stream = try await AudioInput.open(.file(path), output: Fixtures.format(rate: 8000, channels: 1), startAt: .milliseconds(1500))
        #expect(stream.startFrame == 12_000)
        let decoded = try await Fixtures.readAll(stream)
        #expect(Fixtures.difference(decoded, counter[12_000...].map(Int32.init)) == nil)
    }

    @Test func startAtInALossyFileLandsOnTheSignal() async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/tone.ogg"
        let signal = Fixtures.music(frames: 2 * Self.rate, rate: Self.rate)
        try Fixtures.write(path, format: Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS), rate: Self.rate, channels: 2, samples: signal)
        let stream = try await AudioInput.open(.file(path), output: .cd, startAt: .seconds(1))
        let decoded = try await Fixtures.readAll(stream)
        let reference = Signal.channel(signal[(2 * Self.rate)...].map(Int32.init), 0, of: 2)
        let (db, lag) = Signal.snr(reference: reference, decoded: Signal.channel(decoded, 0, of: 2), skip: 2048, maxLag: 8)
        #expect(db > 25 && lag == 0, "SNR \(db) dB at lag \(lag)")
    }

    @Test func startAtTheEndIsRefused() async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/short.wav"
        try Fixtures.write(path, format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), rate: 8000, channels: 1, samples: [Int16](repeating: 1, count: 8000))
        let error = await Fixtures.openError(.file(path), startAt: .seconds(1))
        #expect(error?.code == .startBeyondEnd)
        #expect(await Fixtures.openError(.file(path), startAt: .milliseconds(-1))?.code == .badOption)
    }

    @Test func channelsAreMappedAsDocumented() async throws {
        let dir = try Fixtures.directory()
        // Four channels: 1000, 2000, 3000, 4000 → stereo left = mean(ch0, ch2) = 2000, right = mean(ch1, ch3) = 3000.
        let quad = [Int16](repeating: 0, count: 4000).enumerated().map { Int16(($0.offset % 4 + 1) * 1000) }
        try Fixtures.write("\(dir)/quad.wav", format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), rate: 8000, channels: 4, samples: quad)
        let stereo = try await Fixtures.readAll(try await AudioInput.open(.file("\(dir)/quad.wav"), output: Fixtures.format(rate: 8000, channels: 2)))
        #expect(stereo == [Int32](repeating: 0, count: 1000).flatMap { _ in [2000, 3000] })
        let mono = try await Fixtures.readAll(try await AudioInput.open(.file("\(dir)/quad.wav"), output: Fixtures.format(rate: 8000, channels: 1)))
        #expect(mono == [Int32](repeating: 2500, count: 1000))
        let six = try await Fixtures.readAll(try await AudioInput.open(.file("\(dir)/quad.wav"), output: Fixtures.format(rate: 8000, channels: 6)))
        #expect(six == [Int32](repeating: 0, count: 1000).flatMap { _ in [1000, 2000, 3000, 4000, 0, 0] })
    }

    @Test func titleTagIsTheTitle() async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/tagged.flac"
        try Fixtures.write(path, format: Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16), rate: 8000, channels: 1,
                           samples: [Int16](repeating: 5, count: 800), title: "Morning Tune")
        let stream = try await AudioInput.open(.file(path), output: .cd)
        #expect(stream.source.title == "Morning Tune")
        await stream.close()
        await #expect(throws: AudioInputError(.cancelled, "")) { _ = try await stream.next() }
    }

    /// Issue 30 item 17: the tags a media library shows — title, artist, album (FLAC Vorbis comments, RIFF INFO) —
    /// from the header, through `describeFile` as through `open`; nil where there is none (the title then the name).
    @Test func theTagsAreTheSourcesOwn() async throws {
        let dir = try Fixtures.directory()
        for (name, format) in [("tagged.flac", Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16)), ("tagged.wav", Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16))] {
            let path = "\(dir)/\(name)"
            var info = SF_INFO()
            info.samplerate = 8000
            info.channels = 1
            info.format = format
            guard let file = sf_open(path, Int32(SFM_WRITE), &info) else { throw TestFailure("cannot write \(path)") }
            _ = sf_set_string(file, Int32(SF_STR_TITLE), "Morning Tune")
            _ = sf_set_string(file, Int32(SF_STR_ARTIST), "The Band")
            _ = sf_set_string(file, Int32(SF_STR_ALBUM), "Days")
            let samples = [Int16](repeating: 5, count: 800)
            _ = samples.withUnsafeBufferPointer { sf_writef_short(file, $0.baseAddress, 800) }
            sf_close(file)
            let described = try AudioInput.describeFile(path)
            #expect(described.tags == AudioTags(title: "Morning Tune", artist: "The Band", album: "Days"), "\(name): \(described.tags)")
            let stream = try await AudioInput.open(.file(path), output: .cd)
            #expect(stream.source.tags.artist == "The Band" && stream.source.title == "Morning Tune", "\(name)")
            await stream.close()
        }
        let plain = "\(dir)/plain.flac"
        try Fixtures.write(plain, format: Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16), rate: 8000, channels: 1, samples: [Int16](repeating: 5, count: 800))
        let described = try AudioInput.describeFile(plain)
        #expect(described.tags == AudioTags() && described.title == "plain.flac")
    }

    @Test func addressesAreParsed() throws {
        #expect(try AudioSourceAddress("song.wav") == .file("song.wav"))
        #expect(try AudioSourceAddress("file:///music/a.mp3") == .file("/music/a.mp3"))
        #expect(try AudioSourceAddress("HTTPS://radio.example/live.mp3") == .url("HTTPS://radio.example/live.mp3"))
        #expect(try AudioSourceAddress("http://h:8000/a/b.mp3?x=1").lastComponent == "b.mp3")
        #expect(throws: AudioInputError(.badAddress, "")) { try AudioSourceAddress("ftp://host/a.mp3") }
        #expect(throws: AudioInputError(.badAddress, "")) { try AudioSourceAddress("http:///a.mp3") }
        #expect(throws: AudioInputError(.badAddress, "")) { try AudioSourceAddress("") }
    }
}
