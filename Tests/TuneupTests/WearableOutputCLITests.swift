import Foundation
import Glibc
import Testing

/// Issue 20's defects of `tuneup wearable` (and of the other commands that write files): output files never replace
/// a FIFO and are never written through a symbolic link (devices are refused the same way, checked on /dev/null in
/// SupportTests' SafeOutputTests without ever writing it), one duration grammar, a missing directory is one line and exit 74, --verbose logs the
/// frames, any file name is a recording and a file that is not one is exit 65, plurals.
@Suite("tuneup wearable: output files, durations, verbose", .serialized)
struct WearableOutputCLITests {
    /// A recording of `samples` accelerometer samples, 20 ms apart, written by hand (what `record` writes, trimmed).
    static func recording(_ path: String, samples: Int = 3) throws {
        var lines = [#"{"type":"event","event":"opened","device":"sim:wearable"}"#]
        for i in 0..<samples {
            lines.append(#"{"type":"sample","sensor":"accelerometer","timestamp":\#(i * 20),"deviceTime":\#(i * 20),"x":0.01,"y":-0.02,"z":0.99}"#)
        }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: path))
    }

    static func kind(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & S_IFMT
    }

    @Test func plotRefusesAFIFOAndASymbolicLink() async throws {
        let dir = Scratch.directory
        let rec = dir + "/rec.jsonl"
        try Self.recording(rec)
        let fifo = dir + "/out.svg"
        #expect(mkfifo(fifo, 0o600) == 0)
        let refused = try await CLI.run(["wearable", "plot", rec, "--output", fifo, "--no-png"], timeout: 30)
        #expect(refused.status == 74, "\(refused.stderr)")
        #expect(refused.stderrLines == ["tuneup: cannot write \(fifo): it is a FIFO, not a regular file (output files are never written over a "
            + "device, FIFO, socket or directory)"])
        #expect(Self.kind(fifo) == S_IFIFO, "the FIFO is still a FIFO")

        // Issue 30 §2: a symbolic link is refused, not written through (its target was overwritten).
        let target = dir + "/real.svg", link = dir + "/link.svg"
        try Data("kept".utf8).write(to: URL(fileURLWithPath: target))
        #expect(symlink(target, link) == 0)
        let linked = try await CLI.run(["wearable", "plot", rec, "--output", link, "--no-png"], timeout: 30)
        #expect(linked.status == 74, "\(linked.stderr)")
        #expect(linked.stderrLines == ["tuneup: cannot write \(link): it is a symbolic link (outputs are never written through a link: name the file "
            + "itself)"], "\(linked.stderr)")
        #expect(Self.kind(link) == S_IFLNK, "the link is still a link")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "kept", "its target is untouched")
    }

    /// The PNG goes through the same rule: a FIFO where the PNG would go is refused (exit 74), not written into.
    @Test func plotRefusesAFIFOWhereThePNGWouldGo() async throws {
        guard (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .contains(where: { FileManager.default.isExecutableFile(atPath: "\($0)/rsvg-convert") }) else { return }
        let dir = Scratch.directory
        try Self.recording(dir + "/rec.jsonl")
        #expect(mkfifo(dir + "/rec.png", 0o600) == 0)
        let r = try await CLI.run(["wearable", "plot", dir + "/rec.jsonl"], timeout: 30)
        #expect(r.status == 74 && r.stderrLines.count == 1 && r.stderr.contains("cannot write \(dir)/rec.png: it is a FIFO"), "\(r.stderr)")
        #expect(Self.kind(dir + "/rec.png") == S_IFIFO)
        // Issue 30 §2: every output is checked before any is written: the SVG was written before the PNG failed.
        #expect(Self.kind(dir + "/rec.svg") == nil, "no SVG written")
    }

    @Test func recordRefusesASymbolicLinkAFIFOAndAMissingDirectoryBeforeOpening() async throws {
        let dir = Scratch.directory
        let target = dir + "/kept.jsonl"
        try Data("kept\n".utf8).write(to: URL(fileURLWithPath: target))
        #expect(symlink("kept.jsonl", dir + "/walk.jsonl") == 0)
        // Issue 30 §1: a link is refused, --overwrite or not (it was removed and its target overwritten).
        for overwrite in [[], ["--overwrite"]] {
            let r = try await CLI.run(["wearable", "record", dir + "/walk", "--sensor", "accelerometer", "--duration", "0.3", "--format", "json"] + overwrite)
            #expect(r.status == 74 && r.stderrLines == ["tuneup: cannot write \(dir)/walk.jsonl: it is a symbolic link (outputs are never written "
                + "through a link: name the file itself)"], "\(r.stderr)")
            #expect(Self.kind(dir + "/walk.jsonl") == S_IFLNK, "the link is still a link")
            #expect(try String(contentsOfFile: target, encoding: .utf8) == "kept\n")
            #expect(Self.kind(dir + "/walk.csv") == nil)
        }

        #expect(mkfifo(dir + "/pipe.csv", 0o600) == 0)
        let fifo = try await CLI.run(["wearable", "record", dir + "/pipe", "--duration", "0.3"], timeout: 30)
        #expect(fifo.status == 74 && fifo.stderrLines == ["tuneup: cannot write \(dir)/pipe.csv: it is a FIFO, not a regular file "
            + "(output files are never written over a device, FIFO, socket or directory)"], "\(fifo.stderr)")
        #expect(Self.kind(dir + "/pipe.csv") == S_IFIFO && Self.kind(dir + "/pipe.jsonl") == nil)

        let missing = try await CLI.run(["wearable", "record", dir + "/nodir/f", "--duration", "0.3"], timeout: 30)
        #expect(missing.status == 74, "\(missing.stderr)")
        #expect(missing.stderrLines == ["tuneup: cannot write \(dir)/nodir/f.jsonl: \(dir)/nodir is not a directory"])
    }

    /// Issue 31: `records export --output` wrote a symbolic link's target; it refuses the link now, as `wearable` does.
    @Test func recordsExportRefusesAFIFOAndASymbolicLink() async throws {
        let db = try await RecordsCLITests.filled()
        let dir = Scratch.directory
        #expect(mkfifo(dir + "/units.csv", 0o600) == 0)
        let r = try await CLI.run(["records", "export", "--format", "csv", "--output", dir + "/units.csv", "--db", db], timeout: 30)
        #expect(r.status == 74 && r.stderrLines.count == 1 && r.stderr.contains("it is a FIFO"), "\(r.stderr)")
        #expect(Self.kind(dir + "/units.csv") == S_IFIFO)
        try Data("kept\n".utf8).write(to: URL(fileURLWithPath: dir + "/real.csv"))
        #expect(symlink(dir + "/real.csv", dir + "/link.csv") == 0)
        let linked = try await CLI.run(["records", "export", "--format", "csv", "--output", dir + "/link.csv", "--db", db])
        #expect(linked.status == 74 && linked.stderrLines == ["tuneup: cannot write \(dir)/link.csv: it is a symbolic link (outputs are never "
            + "written through a link: name the file itself)"], "\(linked.stderr)")
        #expect(Self.kind(dir + "/link.csv") == S_IFLNK)
        #expect(try String(contentsOfFile: dir + "/real.csv", encoding: .utf8) == "kept\n", "its target is untouched")
        // A link to a file that does not exist yet creates nothing.
        #expect(symlink(dir + "/made.csv", dir + "/dangling.csv") == 0)
        let dangling = try await CLI.run(["records", "export", "--format", "csv", "--output", dir + "/dangling.csv", "--db", db])
        #expect(dangling.status == 74 && dangling.stderr.contains("it is a symbolic link"), "\(dangling.stderr)")
        #expect(Self.kind(dir + "/made.csv") == nil)
    }

    /// One duration grammar: ms, s, min, h and plain seconds; the message names the forms.
    @Test func durationsTakeMinutesHoursAndPlainSeconds() async throws {
        // Accepted: the command goes on to connect (and fails there, exit 69, not 64).
        for d in ["2min", "1min", "1h", "24h", "90", "1.5"] {
            let r = try await CLI.run(["wearable", "stream", "--duration", d, "--device", "tcp:127.0.0.1:1", "--format", "json"], timeout: 30)
            #expect(r.status == 69, "--duration \(d): \(r.stderr)")
        }
        for d in ["2m", "25h", "0", "-1s", "1e3", "soon"] {
            let r = try await CLI.run(["wearable", "stream", "--duration", d, "--device", "tcp:127.0.0.1:1"], timeout: 30)
            #expect(r.status == 64 && r.stderrLines.count == 1, "--duration \(d): \(r.stderr)")
            #expect(r.stderr.contains("--duration takes a number with ms, s, min or h (500ms, 10s, 2min, 1h) or a plain number of seconds, "
                + "more than 0 and at most 24 h; got '\(d)'"), "\(r.stderr)")
        }
        let search = try await CLI.run(["wearable", "search", "--duration", "2m"], timeout: 30)
        #expect(search.status == 64 && search.stderr.contains("at most 10 min; got '2m'"), "\(search.stderr)")
        // A plain number of seconds streams that long from the simulated wearable.
        let plain = try await CLI.run(["wearable", "stream", "--duration", "0.3", "--sensor", "accelerometer", "--format", "json"])
        #expect(plain.status == 0 && plain.stdout.contains(#""type":"summary""#), "\(plain.stderr)")
    }

    /// -v logs the session's frames on stderr, as probe -v does; without it stderr stays empty.
    @Test func verboseLogsTheFrames() async throws {
        let quiet = try await CLI.run(["wearable", "info", "--format", "json"])
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
        let verbose = try await CLI.run(["wearable", "info", "-v", "--format", "json"])
        #expect(verbose.status == 0, "\(verbose.stderr)")
        let sent = verbose.stderrLines.filter { $0.contains("→") }, received = verbose.stderrLines.filter { $0.contains("←") }
        #expect(sent.count >= 3 && received.count >= 3, "requests and replies logged: \(verbose.stderr)")
        #expect(try json(verbose.stdout)["productId"] as? Int == 0x4020, "stdout stays the JSON")
        let stream = try await CLI.run(["wearable", "stream", "-v", "--duration", "0.3", "--sensor", "accelerometer", "--format", "json"])
        #expect(stream.status == 0 && stream.stderrLines.contains { $0.contains("←") }, "\(stream.stderr)")
    }

    /// Any file name is read; a file that is not a recording is exit 65 with its line; --output x.png is refused.
    @Test func plotReadsAnyFileNameAndRefusesWhatIsNotARecording() async throws {
        let dir = Scratch.directory
        let passwd = try await CLI.run(["wearable", "plot", "/etc/passwd", "--no-png"])
        #expect(passwd.status == 65 && passwd.stderrLines == ["tuneup: /etc/passwd:1: not a line of a wearable recording"], "\(passwd.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "/etc/passwd.svg"))

        let named = dir + "/walk.txt"
        try Self.recording(named, samples: 1)
        let one = try await CLI.run(["wearable", "plot", named, "--no-png"])
        #expect(one.status == 0, "\(one.stderr)")
        #expect(one.stdout == "wrote \(named).svg: 1 panel (accelerometer), 1 sample, 0 gestures over 0.0 s\n", "\(one.stdout)")
        #expect(try String(contentsOfFile: named + ".svg", encoding: .utf8).contains("1 sensor, 1 sample, 0 gestures"))

        let png = try await CLI.run(["wearable", "plot", named, "--output", dir + "/x.png"])
        #expect(png.status == 64 && png.stderrLines.count == 1 && png.stderr.contains("--output names the SVG to write"), "\(png.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/x.png"))
    }
}
