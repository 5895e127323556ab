import AudioInput
import CSndfile
import Foundation
import Speaker
import Testing
import TestSupport
import Transport

extension TestHTTPServer {
    /// The source address of `path` on this server.
    func url(_ path: String) -> AudioSourceAddress { .url(address(path)) }
}

@Suite struct HTTPSourceTests {
    struct Files {
        let wav: [UInt8]
        let mp3: [UInt8]
        let wavPath: String
        let mp3Path: String
        /// Every format served in `streamsDecodeLikeTheFile`: its URL path, file, bytes, container and media type.
        let streamed: [(path: String, file: String, bytes: [UInt8], container: String, type: String)]
    }

    static func files() throws -> Files {
        let dir = try Fixtures.directory()
        let signal = Fixtures.music(frames: 3 * 44_100, rate: 44_100)
        let formats: [(name: String, format: Int32, container: String, type: String)] = [
            ("tone.wav", Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), "WAV", "audio/wav"),
            ("tone.mp3", Int32(SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III), "MP3", "audio/mpeg"),
            ("tone.flac", Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16), "FLAC", "audio/flac"),
            ("tone.ogg", Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS), "Ogg", "audio/ogg"),
        ]
        var streamed: [(path: String, file: String, bytes: [UInt8], container: String, type: String)] = []
        for f in formats {
            try Fixtures.write("\(dir)/\(f.name)", format: f.format, rate: 44_100, channels: 2, samples: signal)
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(dir)/\(f.name)")))
            // The MP3 as a live radio stream would be: under a path, never with a length.
            streamed.append((f.container == "MP3" ? "/live/\(f.name)" : "/\(f.name)", "\(dir)/\(f.name)", bytes, f.container, f.type))
        }
        return Files(wav: streamed[0].bytes, mp3: streamed[1].bytes, wavPath: streamed[0].file, mp3Path: streamed[1].file,
                     streamed: streamed)
    }

    // The source's own rate: these tests are about the transfer (the bytes over HTTP decode as the file does), not
    // the resampler, whose last bit can depend on how the stream was cut into reads.
    static let output = Fixtures.format(rate: 44_100, channels: 2)

    @Test(arguments: [true, false])
    func streamsDecodeLikeTheFile(withLength: Bool) async throws {
        try await withTimeLimit {
            let f = try Self.files()
            let server = try await TestHTTPServer(Dictionary(uniqueKeysWithValues: f.streamed.map {
                ($0.path, TestHTTPServer.Answer.body($0.bytes, type: $0.type, length: withLength))
            }))
            for (path, file, _, container, _) in f.streamed {
                let stream = try await AudioInput.open(server.url(path), output: Self.output)
                #expect(stream.source.container == container)
                #expect(stream.source.isNetworkStream)
                #expect(stream.source.title == String(path.split(separator: "/").last ?? ""))
                // A WAV header and FLAC's STREAMINFO count the frames; an MP3 or Ogg stream's length is not known.
                let frames: Int64 = 3 * 44_100
                #expect(stream.source.frames == (container == "WAV" || container == "FLAC" ? frames : nil), "\(container)")
                let overHTTP = try await Fixtures.readAll(stream, maxFrames: 3000)
                let local = try await Fixtures.readAll(try await AudioInput.open(.file(file), output: Self.output))
                #expect(container != "WAV" || overHTTP.count == 2 * 3 * 44_100, "three seconds of stereo")
                #expect(overHTTP.count == local.count, "\(path): \(overHTTP.count) samples over HTTP, \(local.count) from the file")
                #expect(Fixtures.difference(overHTTP, local) == nil, "\(path) over HTTP differs from the file")
            }
            await server.stop()
        }
    }

    @Test func mp3OverHTTP() async throws {
        try await withTimeLimit {
            let f = try Self.files()
            let server = try await TestHTTPServer(["/live/tone.mp3": .body(f.mp3, type: "audio/mpeg", length: false)])
            let overHTTP = try await Fixtures.readAll(try await AudioInput.open(server.url("/live/tone.mp3"), output: Self.output))
            let local = try await Fixtures.readAll(try await AudioInput.open(.file(f.mp3Path), output: Self.output))
            #expect(Fixtures.difference(overHTTP, local) == nil)
            await server.stop()
        }
    }

    @Test
    func startAtSkipsInAStream() async throws {
        try await withTimeLimit {
            let f = try Self.files()
            let server = try await TestHTTPServer(["/tone.wav": .body(f.wav, type: "audio/wav", length: false)])
            let stream = try await AudioInput.open(server.url("/tone.wav"), output: .cd, startAt: .seconds(2))
            #expect(stream.startFrame == 88_200)
            let decoded = try await Fixtures.readAll(stream)
            #expect(Fixtures.difference(decoded, Fixtures.music(frames: 3 * 44_100, rate: 44_100)[(2 * 88_200)...].map(Int32.init)) == nil)
            await server.stop()
        }
    }

    /// Issue 30 item 12: a URL source cannot go back, but it can start later (`--from`): it is requested again and
    /// decoded and dropped up to the frame, exactly.
    @Test func aURLSourceStartsLaterByDecodingAndDropping() async throws {
        try await withTimeLimit {
            let f = try Self.files()
            let server = try await TestHTTPServer(["/tone.wav": .body(f.wav, type: "audio/wav", length: false)])
            let source = try await AudioInputSource.open(server.url("/tone.wav"))
            #expect(!source.isSeekable && source.canStartLater)
            try await source.seek(toFrame: 88_200 + 7)
            var bytes: [UInt8] = []
            while true {
                let chunk = try await source.read(maxFrames: 10_000)
                if chunk.isEmpty { break }
                bytes += chunk
            }
            let samples = stride(from: 0, to: bytes.count - 1, by: 2).map { Int32(Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)) }
            #expect(Fixtures.difference(samples, Fixtures.music(frames: 3 * 44_100, rate: 44_100)[(2 * (88_200 + 7))...].map(Int32.init)) == nil)
            await source.close()
            await server.stop()
        }
    }

    @Test func badAnswersFailInOpen() async throws {
        try await withTimeLimit {
            var random = SystemRandomNumberGenerator()
            let server = try await TestHTTPServer([
                "/page.mp3": .body(Array("<!DOCTYPE html><html><body>Radio</body></html>".utf8), type: "text/html; charset=utf-8", length: true),
                "/noise.mp3": .body([0, 1] + (0..<5000).map { _ in UInt8.random(in: 0...255, using: &random) }, type: "application/octet-stream", length: true),
                "/empty.mp3": .body([], type: "audio/mpeg", length: true),
                "/broken": .status(500, "Internal Server Error"),
            ])
            let cases: [(String, AudioInputError.Code)] = [
                ("/missing.mp3", .httpStatus), ("/broken", .httpStatus), ("/page.mp3", .notAudio), ("/noise.mp3", .notAudio),
                ("/empty.mp3", .empty),
            ]
            for (path, code) in cases {
                let error = await Fixtures.openError(server.url(path))
                #expect(error?.code == code, "\(path): \(error.map { "\($0.codeName): \($0.message)" } ?? "opened")")
                #expect(error.map { !$0.message.contains("\n") && $0.message.contains(path) } == true)
            }
            #expect(await Fixtures.openError(server.url("/missing.mp3"))?.message.contains("404") == true)
            await server.stop()
        }
    }

    @Test func refusedConnection() async throws {
        try await withTimeLimit {
            let listener = try await TCPListener.bind()
            guard case .tcp(_, let port) = listener.boundAddress else { throw TestFailure("not a TCP address: \(listener.boundAddress)") }
            listener.close()
            let error = await Fixtures.openError(.url("http://127.0.0.1:\(port)/a.mp3"))
            #expect(error?.code == .connectionFailed, "\(String(describing: error))")
            #expect(error?.category == .connection)
        }
    }

    @Test func silentServerStallsWithinTheTimeout() async throws {
        try await withTimeLimit {
            let server = try await TestHTTPServer(["/live.mp3": .stall(prefix: [], type: "audio/mpeg")])
            let options = AudioInputOptions(connectTimeout: .seconds(5), stallTimeout: .milliseconds(300))
            let error = await Fixtures.openError(server.url("/live.mp3"), options: options)
            #expect(error?.code == .stalled, "\(String(describing: error))")
            await server.stop()
        }
    }

    @Test func stallInTheMiddleFailsTheRead() async throws {
        try await withTimeLimit {
            let f = try Self.files()
            let server = try await TestHTTPServer(["/half.wav": .stall(prefix: Array(f.wav.prefix(200_000)), type: "audio/wav")])
            let options = AudioInputOptions(stallTimeout: .milliseconds(300))
            let stream = try await AudioInput.open(server.url("/half.wav"), output: .cd, options: options)
            let (_, frames, failure) = await Fixtures.readUntilEnd(stream)
            #expect(failure?.code == .stalled, "\(String(describing: failure))")
            // Every frame that came before the stall is delivered, then the stall: (200000 - 44 header bytes) / 4
            // bytes a frame.
            let available = (200_000 - 44) / 4
            #expect(frames == available, "\(frames) of \(available) frames")
            #expect(failure?.message.hasSuffix("/half.wav sent nothing for 0.3 s") == true, "\(String(describing: failure))")
            await stream.close()
            await server.stop()
        }
    }

    /// Issue 30 item 14: the frames that arrived before a server went silent are handed out at once, not after the
    /// stall timeout (600 s here: only what arrived can be read before the test's limit) — they were held with the
    /// block being decoded, too late to be played.
    @Test func whatArrivedBeforeAStallIsHandedOutWithoutWaitingForIt() async throws {
        try await withTimeLimit {
            let f = try Self.files()
            let server = try await TestHTTPServer(["/half.wav": .stall(prefix: Array(f.wav.prefix(200_000)), type: "audio/wav")])
            let stream = try await AudioInput.open(server.url("/half.wav"), output: Self.output,
                                                   options: AudioInputOptions(stallTimeout: .seconds(600)))
            let available = (200_000 - 44) / 4
            var samples: [Int32] = []
            while samples.count < 2 * available {
                guard let chunk = try await stream.next(maxFrames: 4096) else { break }
                samples += chunk.samples
            }
            #expect(samples.count == 2 * available)
            #expect(Fixtures.difference(samples, Fixtures.music(frames: 3 * 44_100, rate: 44_100).prefix(2 * available).map(Int32.init)) == nil)
            await stream.close()
            await server.stop()
        }
    }

    /// Issue 19: a transfer cut in the middle (1/3 of a WAV with its Content-Length) hands over every frame that
    /// arrived, then fails with the transfer's error; before, the frames still buffered were thrown away.
    @Test func aCutTransferHandsOverWhatArrivedThenFails() async throws {
        try await withTimeLimit {
            let f = try Self.files()
            let cut = 44 + (f.wav.count - 44) / 3 / 4 * 4
            let server = try await TestHTTPServer(["/song.wav": .cut(prefix: Array(f.wav.prefix(cut)), type: "audio/wav", announced: f.wav.count)])
            let stream = try await AudioInput.open(server.url("/song.wav"), output: Self.output)
            let (samples, _, failure) = await Fixtures.readUntilEnd(stream)
            #expect(failure?.code == .connectionFailed && failure?.message.contains("/song.wav") == true, "\(String(describing: failure))")
            let arrived = (cut - 44) / 4
            #expect(samples.count == 2 * arrived, "\(samples.count / 2) of the \(arrived) frames that arrived")
            #expect(Fixtures.difference(samples, Fixtures.music(frames: 3 * 44_100, rate: 44_100).prefix(2 * arrived).map(Int32.init)) == nil)
            await stream.close()
            await server.stop()
        }
    }

    /// A stream with no Content-Length that ends before the frames its WAV header counts was cut too: the frames that
    /// arrived, then `.truncated` saying where it ended.
    @Test func aStreamEndingBeforeItsHeaderSaysIsTruncated() async throws {
        try await withTimeLimit {
            let f = try Self.files()
            let cut = 44 + (f.wav.count - 44) / 2 / 4 * 4
            let server = try await TestHTTPServer(["/song.wav": .cut(prefix: Array(f.wav.prefix(cut)), type: "audio/wav", announced: nil)])
            let stream = try await AudioInput.open(server.url("/song.wav"), output: Self.output)
            let (_, frames, failure) = await Fixtures.readUntilEnd(stream)
            #expect(frames == (cut - 44) / 4)
            #expect(failure?.code == .truncated, "\(String(describing: failure))")
            #expect(failure?.message.contains("is truncated: the audio ends at 1.5 s of the 3.0 s") == true, "\(String(describing: failure))")
            await stream.close()
            await server.stop()
        }
    }

    @Test func closeEndsAWaitingRead() async throws {
        try await withTimeLimit {
            let f = try Self.files()
            let server = try await TestHTTPServer(["/half.wav": .stall(prefix: Array(f.wav.prefix(100_000)), type: "audio/wav")])
            // A stall timeout far beyond the test's limit: only close() can end the wait.
            let stream = try await AudioInput.open(server.url("/half.wav"), output: .cd, options: AudioInputOptions(stallTimeout: .seconds(600)))
            let reader = Task { () -> AudioInputError? in
                do throws(AudioInputError) {
                    while try await stream.next() != nil {}
                    return nil
                } catch {
                    return error
                }
            }
            // Wait until the reader has taken every byte there is, then close.
            try await waitUntil("the reader is waiting for bytes") { await Self.isWaiting(stream) }
            await stream.close()
            let error = await reader.value
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            await server.stop()
        }
    }

    /// Whether the stream's decoder is blocked waiting for network bytes.
    static func isWaiting(_ stream: AudioStream) async -> Bool { stream.waitingForNetwork }
}
