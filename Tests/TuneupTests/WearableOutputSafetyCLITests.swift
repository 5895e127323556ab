import Foundation
import Glibc
import Testing

/// Issue 30 ("What new users found"), the wearable items: a recording or plot never destroys what was there (a failed
/// `record` kept nothing of an earlier recording of the name, `plot --output` could replace the recording it read),
/// names that are not file stems, `stream | head -1`, `--reconnect-timeout 0s`, `--replay DIR`.
@Suite("tuneup wearable: what is there is kept", .serialized)
struct WearableOutputSafetyCLITests {
    static func text(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    static func write(_ text: String, _ path: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: path)) }

    /// The names in `dir`, sorted (temporary files would show).
    static func listing(_ dir: String) throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: dir).sorted() }

    /// An earlier recording (`exp.jsonl`, `exp.csv`, `exp.accelerometer.csv`) survives a `record exp --overwrite` that
    /// fails before it starts: the device unreachable (69), the configuration refused by the library (64) and by the
    /// device (65). Nothing is left behind either.
    @Test func aRecordThatFailsTouchesNothing() async throws {
        let dir = Scratch.directory
        let names = ["exp.jsonl", "exp.csv", "exp.accelerometer.csv"]
        for name in names { try Self.write("earlier \(name)\n", dir + "/" + name) }
        let cases: [(args: [String], status: Int32)] = [
            (["--device", "tcp:127.0.0.1:1", "--duration", "1s"], 69),
            (["--sensor", "rotation", "--period", "320ms", "--duration", "1s"], 64),
            (["--sensor", "rotation", "--period", "320ms", "--no-check", "--duration", "1s"], 65),
        ]
        for c in cases {
            let r = try await CLI.run(["wearable", "record", dir + "/exp", "--overwrite", "--split-by-sensor", "--sensor", "accelerometer"] + c.args,
                                      timeout: 60)
            #expect(r.status == c.status && r.stderrLines.count <= 2, "\(c.args): \(r.stderr)")
            for name in names { #expect(Self.text(dir + "/" + name) == "earlier \(name)\n", "\(c.args): \(name)") }
            #expect(try Self.listing(dir) == names.sorted(), "\(c.args): nothing left behind")
        }
    }

    /// An existing recording is refused with one line naming it (exit 74) before the device is opened; `--overwrite`
    /// replaces it once the recording runs.
    @Test func anExistingRecordingIsReplacedOnlyWithOverwrite() async throws {
        let dir = Scratch.directory
        try Self.write("earlier\n", dir + "/exp.csv")
        let refused = try await CLI.run(["wearable", "record", dir + "/exp", "--duration", "0.3", "--sensor", "accelerometer", "--format", "json"])
        #expect(refused.status == 74 && refused.stderrLines == ["tuneup: \(dir)/exp.csv exists: give --overwrite to replace it, or another name "
            + "(nothing was written)"], "\(refused.stderr)")
        #expect(refused.stdout.isEmpty)
        #expect(Self.text(dir + "/exp.csv") == "earlier\n")
        #expect(try Self.listing(dir) == ["exp.csv"])

        let replaced = try await CLI.run(["wearable", "record", dir + "/exp", "--duration", "0.3", "--sensor", "accelerometer", "--format", "json",
                                          "--overwrite"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(Self.text(dir + "/exp.csv")?.hasPrefix("kind,") == true)
        #expect(Self.text(dir + "/exp.jsonl")?.contains(#""type":"summary""#) == true)
        #expect(try Self.listing(dir) == ["exp.csv", "exp.jsonl"])
    }

    /// `record .` wrote a hidden `..jsonl`; a directory or a device as the name is refused; as root `record
    /// /dev/full` created files in /dev.
    @Test func recordRefusesWhatIsNotAFileStem() async throws {
        let dir = Scratch.directory
        for name in [".", "..", "./", "x/..", "..jsonl"] {
            let r = try await CLI.run(["wearable", "record", name, "--duration", "0.3"], directory: dir)
            #expect(r.status == 64 && r.stderr.contains("record needs a file name for the recording"), "\(name): \(r.stderr)")
        }
        #expect(try Self.listing(dir).isEmpty)

        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: false)
        let directory = try await CLI.run(["wearable", "record", dir + "/sub", "--duration", "0.3"])
        #expect(directory.status == 74 && directory.stderrLines == ["tuneup: cannot record to \(dir)/sub: it is a directory, not a file name "
            + "(PATH writes PATH.jsonl and PATH.csv; for files in it, give \(dir)/sub/NAME)"], "\(directory.stderr)")
        #expect(try Self.listing(dir) == ["sub"])

        defer { for suffix in [".jsonl", ".csv"] { unlink("/dev/full" + suffix) } }
        let device = try await CLI.run(["wearable", "record", "/dev/full", "--duration", "0.3"])
        #expect(device.status == 74 && device.stderrLines == ["tuneup: cannot record to /dev/full: it is a character device, not a file name "
            + "(PATH writes PATH.jsonl and PATH.csv)"], "\(device.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "/dev/full.jsonl"))
        let inDev = try await CLI.run(["wearable", "record", "/dev/tuneup-issue30", "--duration", "0.3"])
        defer { for suffix in [".jsonl", ".csv"] { unlink("/dev/tuneup-issue30" + suffix) } }
        #expect(inDev.status == 74 && inDev.stderrLines == ["tuneup: cannot record to /dev/tuneup-issue30: /dev holds devices or kernel objects, not files"], "\(inDev.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "/dev/tuneup-issue30.jsonl"))
    }

    /// `plot good.jsonl --output good.jsonl` replaced the recording with its SVG: any output that is the input, by
    /// any name (a hard link, a path through `..`), is refused and the recording kept.
    @Test func plotRefusesToWriteOverItsRecording() async throws {
        let dir = Scratch.directory
        try WearableOutputCLITests.recording(dir + "/good.jsonl")
        let before = Self.text(dir + "/good.jsonl")
        #expect(link(dir + "/good.jsonl", dir + "/alias.svg") == 0)
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: false)
        for output in [dir + "/good.jsonl", dir + "/sub/../good.jsonl", dir + "/alias.svg"] {
            let r = try await CLI.run(["wearable", "plot", dir + "/good.jsonl", "--output", output, "--no-png"])
            #expect(r.status == 74 && r.stderrLines.count == 1 && r.stderr.contains("cannot write \(output): it is ")
                && r.stderr.contains("the file being read (name another output)"), "\(output): \(r.stderr)")
            #expect(Self.text(dir + "/good.jsonl") == before, "\(output)")
        }
        // The PNG's name counts too: `plot rec --output good.svg` would make good.png; here good.png is the recording.
        try WearableOutputCLITests.recording(dir + "/good.png")
        if (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .contains(where: { FileManager.default.isExecutableFile(atPath: "\($0)/rsvg-convert") }) {
            let png = try await CLI.run(["wearable", "plot", dir + "/good.png", "--output", dir + "/good.svg"])
            #expect(png.status == 74 && png.stderr.contains("the file being read"), "\(png.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir + "/good.svg"), "nothing written before the refusal")
        }
    }

    /// `stream --format json | head -1` ran (holding the device) to the end of --duration: it stops at the first
    /// failed write, closes the session and exits 74 with one line (docs/cli.md). The wait is the runner's hang guard.
    @Test func streamStopsWhenItsReaderGoes() async throws {
        let script = #"{ "$0" wearable stream --duration 24h --sensor accelerometer --format json; echo "status=$?" >&2; } | head -1"#
        let r = try await offThePool {
            try CLI.runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", script, CLI.binary.path],
                               environment: ["XDG_STATE_HOME": Scratch.directory, "TUNEUP_DEVICE": nil], timeout: 120, name: "stream | head -1")
        }
        #expect(r.stdout.split(separator: "\n").count == 1, "\(r.stdout)")
        #expect(r.stderrLines == ["tuneup: cannot write to standard output: Broken pipe", "status=74"], "\(r.stderr)")
    }

    /// `--reconnect-timeout 0s` (any zero) means 0, as `0` does.
    @Test func aZeroReconnectTimeoutInAnyForm() async throws {
        for zero in ["0", "0s", "0ms", "0.0"] {
            let r = try await CLI.run(["wearable", "stream", "--reconnect-timeout", zero, "--duration", "0.2", "--sensor", "accelerometer",
                                       "--format", "json"])
            #expect(r.status == 0 && r.stdout.contains(#""type":"summary""#), "\(zero): \(r.stderr)")
        }
        let bad = try await CLI.run(["wearable", "stream", "--reconnect-timeout", "-1s", "--duration", "0.2"])
        #expect(bad.status == 64 && bad.stderr.contains("--reconnect-timeout takes never, 0"), "\(bad.stderr)")
    }

    /// `sim wearable --replay DIR` said "no such readable file".
    @Test func replayOfADirectorySaysSo() async throws {
        let dir = Scratch.directory
        let r = try await CLI.run(["sim", "wearable", "--replay", dir])
        #expect(r.status == 74 && r.stderrLines == ["tuneup: cannot read the recording \(dir): it is a directory"], "\(r.stderr)")
        let missing = try await CLI.run(["sim", "wearable", "--replay", dir + "/none.jsonl"])
        #expect(missing.status == 74 && missing.stderrLines == ["tuneup: cannot read the recording \(dir)/none.jsonl: No such file or directory"],
                "\(missing.stderr)")
    }
}
