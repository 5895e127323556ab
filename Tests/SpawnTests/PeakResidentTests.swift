import Spawn
import Testing

/// What keeps `ChildProcess` rather than swift-subprocess (docs/architecture.md, "Child processes"): a child's peak
/// resident set size, from the reaping `wait4`, which `tuneup-bench wearable-record` reports for `tuneup wearable
/// record` and `plot`. swift-subprocess 1.0.2 reaps with `waitid` and its `TerminationStatus` carries no resource use.
@Suite struct PeakResidentTests {
    @Test func aChildsPeakResidentSizeIsKnownOnceItEnded() async throws {
        // 64 MiB written page by page (so that every page is resident), then a line, then the child waits for its input.
        let script = "import sys\nb = bytearray(64 << 20)\nb[::4096] = b'\\x01' * ((64 << 20) // 4096)\nprint('held', flush=True)\nsys.stdin.read()\n"
        let child = try ChildProcess("/usr/bin/python3", ["-c", script], stdin: .pipe)
        #expect(await child.output?.lines(1, timeout: 60) == ["held"])
        #expect(child.peakResidentKilobytes == nil, "unknown while the child runs")
        child.closeInput()
        #expect(await child.exited(within: 60) == .exit(0))
        let peak = try #require(child.peakResidentKilobytes)
        #expect(peak >= 64 * 1024, "peak \(peak) KiB")
        #expect(peak < 1024 * 1024, "peak \(peak) KiB")
    }
}
