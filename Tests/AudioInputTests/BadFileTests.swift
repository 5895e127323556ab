import AudioInput
import CSndfile
import Foundation
import Testing
import TestSupport

/// Every bad local source fails in `open` with its code and one line naming the file.
@Suite struct BadFileTests {
    static func expectError(_ path: String, _ code: AudioInputError.Code, sourceLocation: SourceLocation = #_sourceLocation) async {
        let error = await Fixtures.openError(.file(path))
        #expect(error?.code == code, "\(path): \(error.map { "\($0.codeName): \($0.message)" } ?? "opened")", sourceLocation: sourceLocation)
        if let error {
            #expect(!error.message.contains("\n") && error.message.contains(path), "\(error.message)", sourceLocation: sourceLocation)
        }
    }

    static func validWAV(_ dir: String) throws -> Data {
        let path = "\(dir)/valid.wav"
        try Fixtures.write(path, format: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16), rate: 44_100, channels: 2,
                           samples: Fixtures.music(frames: 44_100, rate: 44_100))
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    @Test func missingFile() async throws {
        let dir = try Fixtures.directory()
        await Self.expectError("\(dir)/nothing.wav", .fileNotFound)
        await Self.expectError("\(dir)/no/such/dir.wav", .fileNotFound)
    }

    @Test func directory() async throws {
        await Self.expectError(try Fixtures.directory(), .notAFile)
    }

    /// Issue 30 item 11: a named pipe with no writer is refused at once, in one line (the open blocked forever).
    @Test func aNamedPipeIsRefusedAtOnce() async throws {
        let path = "\(try Fixtures.directory())/f.wav"
        #expect(mkfifo(path, 0o600) == 0)
        try await withTimeLimit {
            await Self.expectError(path, .notAFile)
            let error = await Fixtures.openError(.file(path))
            #expect(error?.message.contains("named pipe") == true, "\(String(describing: error))")
        }
    }

    @Test func zeroBytes() async throws {
        let path = "\(try Fixtures.directory())/empty.wav"
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        await Self.expectError(path, .empty)
    }

    @Test func truncatedHeader() async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/cut.wav"
        try Self.validWAV(dir).prefix(20).write(to: URL(fileURLWithPath: path))
        await Self.expectError(path, .truncated)
    }

    @Test func truncatedAudio() async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/half.wav"
        try Self.validWAV(dir).prefix(100_000).write(to: URL(fileURLWithPath: path))
        await Self.expectError(path, .truncated)
    }

    /// Issue 19: a FLAC file cut in the middle opens (its header is whole) and plays to where it was cut, then fails
    /// saying so; libFLAC alone ends it quietly, as if it were the end.
    @Test(arguments: [Duration.zero, .milliseconds(100)])
    func aFLACFileCutInTheMiddleGivesItsFramesThenFails(startAt: Duration) async throws {
        let dir = try Fixtures.directory()
        let whole = "\(dir)/whole.flac", path = "\(dir)/cut.flac"
        try Fixtures.write(whole, format: Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16), rate: 44_100, channels: 2,
                           samples: Fixtures.music(frames: 2 * 44_100, rate: 44_100))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: whole))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: path))
        let stream = try await AudioInput.open(.file(path), output: Fixtures.format(rate: 44_100, channels: 2), startAt: startAt)
        let (_, frames, failure) = await Fixtures.readUntilEnd(stream)
        await stream.close()
        #expect(frames > 44_100 / 2 && frames < 2 * 44_100, "\(frames) frames")
        // Issue 30 item 17: said as what it is (libFLAC's "lost sync" was the line).
        #expect(failure?.code == .truncated, "\(String(describing: failure))")
        #expect(failure?.message.contains("is truncated: the audio ends at") == true && failure?.message.contains("lost sync") == false,
                "\(String(describing: failure))")
        #expect(failure?.category == .device && failure?.message.contains(path) == true, "\(String(describing: failure))")
    }

    /// Issue 30 item 17: a FLAC file damaged in the middle (its length whole) is damaged, not truncated: its frames up
    /// to the damage, then `corrupt` — also when the damage falls inside a read (a start that is not on a FLAC frame
    /// boundary), where it said "is truncated".
    @Test(arguments: [Duration.zero, .milliseconds(100)])
    func aFLACFileDamagedInTheMiddleIsCorruptNotTruncated(startAt: Duration) async throws {
        let dir = try Fixtures.directory()
        let whole = "\(dir)/whole.flac", path = "\(dir)/damaged.flac"
        try Fixtures.write(whole, format: Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16), rate: 44_100, channels: 2,
                           samples: Fixtures.music(frames: 2 * 44_100, rate: 44_100))
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: whole)))
        for i in (bytes.count / 2)..<(bytes.count / 2 + 3_000) { bytes[i] = UInt8(truncatingIfNeeded: Int(bytes[i]) * 7 + 13) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let stream = try await AudioInput.open(.file(path), output: Fixtures.format(rate: 44_100, channels: 2), startAt: startAt)
        let (_, frames, failure) = await Fixtures.readUntilEnd(stream)
        await stream.close()
        #expect(frames > 0 && frames < 2 * 44_100, "\(frames) frames")
        #expect(failure?.code == .corrupt, "\(String(describing: failure))")
        #expect(failure?.message.contains("truncated") == false && failure?.message.contains(path) == true, "\(String(describing: failure))")
    }

    @Test func garbageBytes() async throws {
        let path = "\(try Fixtures.directory())/noise.wav"
        var random = SystemRandomNumberGenerator()
        // Garbage that starts with a NUL and a control byte, so it cannot be mistaken for text.
        let bytes = [0x00, 0x13] + (0..<4000).map { _ in UInt8.random(in: 0...255, using: &random) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        await Self.expectError(path, .notAudio)
    }

    @Test func textNamedMP3() async throws {
        let path = "\(try Fixtures.directory())/notes.mp3"
        try "these are my notes, not a song\n".write(toFile: path, atomically: true, encoding: .utf8)
        await Self.expectError(path, .notAudio)
        let error = await Fixtures.openError(.file(path))
        #expect(error?.message.contains("text") == true)
    }

    @Test func unsupportedContainer() async throws {
        let path = "\(try Fixtures.directory())/song.m4a"
        // The start of an MPEG-4 audio file: an ftyp box of brand M4A.
        let ftyp: [UInt8] = [0, 0, 0, 0x20] + Array("ftypM4A ".utf8) + [0, 0, 0, 0] + Array("M4A mp42isom".utf8) + [0, 0, 0, 0]
        try Data(ftyp + [UInt8](repeating: 0, count: 4000)).write(to: URL(fileURLWithPath: path))
        await Self.expectError(path, .unsupportedFormat)
    }

    /// Skipped (visibly) as root: root reads a file whatever its mode. `unreadablePath` runs everywhere.
    @Test(.enabled(if: getuid() != 0, "root reads every file whatever its mode: chmod 000 cannot make one unreadable"))
    func unreadableFile() async throws {
        let dir = try Fixtures.directory()
        let path = "\(dir)/locked.wav"
        try Self.validWAV(dir).write(to: URL(fileURLWithPath: path))
        chmod(path, 0)
        await Self.expectError(path, .fileUnreadable)
    }

    /// Paths the system refuses to open for reasons other than their absence: unreadable, for root too, each in
    /// one line naming the path.
    @Test func unreadablePath() async throws {
        let dir = try Fixtures.directory()
        // A symbolic link loop (ELOOP).
        #expect(symlink("\(dir)/loop-b.wav", "\(dir)/loop-a.wav") == 0 && symlink("\(dir)/loop-a.wav", "\(dir)/loop-b.wav") == 0)
        await Self.expectError("\(dir)/loop-a.wav", .fileUnreadable)
        // A file name longer than the file system takes (ENAMETOOLONG).
        await Self.expectError("\(dir)/" + String(repeating: "a", count: 300) + ".wav", .fileUnreadable)
    }
}
