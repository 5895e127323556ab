import Foundation
import Testing

/// `wearable record` on a disk that fills (issue 20 §2: "a full disk stops the recording with one line, keeping what
/// was written").
@Suite struct WearableRecordingFailureCLITests {
    /// The shell's file-size limit (`ulimit -f`, SIGXFSZ ignored) makes every write past it fail with EFBIG, as a full
    /// disk fails them with ENOSPC: the recording stops with one line naming the file (exit 74), the files keep what
    /// was written, and what was written still plots.
    @Test func aFullDiskStopsTheRecordingWithOneLineAndKeepsWhatWasWritten() async throws {
        let sim = try await RunningWearable.start(["--time-scale", "30"])
        let dir = Scratch.directory
        let path = dir + "/walk"
        let script = #"ulimit -f 64; trap '' XFSZ; exec "$0" wearable record "$1" --device "$2" --duration 10min --period 20ms --format json"#
        let r = try await offThePool {
            try CLI.runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", script, CLI.binary.path, path, sim.address],
                               environment: ["XDG_STATE_HOME": dir, "TUNEUP_DEVICE": nil], timeout: 120, name: "record with ulimit -f 64")
        }
        #expect(r.status == 74, "exit \(r.status): \(r.stderr)")
        let failures = r.stderrLines.filter { $0.hasPrefix("tuneup: ") }
        #expect(failures.count == 1 && r.stderrLines.last == failures.first, "\(r.stderr)")
        #expect(failures.first?.contains("cannot write \(path).jsonl: File too large; the recording stopped there, what was written is kept") == true,
                "\(r.stderr)")
        let written = try String(contentsOfFile: path + ".jsonl", encoding: .utf8)
        #expect(written.split(separator: "\n").first?.contains(#""type":"metadata""#) == true, "\(written.prefix(200))")
        #expect(written.utf8.count > 1000 && written.utf8.count <= 65536, "\(written.utf8.count) bytes")
        // In whole lines: the line the failure cut is taken off (it made plot refuse the whole file).
        #expect(written.hasSuffix("\n"), "\(written.suffix(200))")
        let plot = try await CLI.run(["wearable", "plot", path + ".jsonl", "--no-png", "--output", dir + "/walk.svg"], state: dir)
        #expect(plot.status == 0, "what a full disk left plots: \(plot.stderr)")
        #expect(await sim.quit() == 0)
    }
}
