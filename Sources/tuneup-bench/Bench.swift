import ArgumentParser
import Foundation

@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tuneup-bench",
        abstract: "Benchmarks of Tuneup's performance goals. Build with -c release.",
        discussion: """
            swift run -c release tuneup-bench codec   # stream decoding vs a plain byte sum, same run
            swift run -c release tuneup-bench probe   # wall time of 'tuneup probe' against a TCP simulator
            """,
        subcommands: [Codec.self, Probe.self])

    struct Codec: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Decode throughput of a long mixed SPP stream and its ratio to a byte-sum pass over the same bytes.",
            discussion: "Goal: ratio >= 0.5 (decoder at least half as fast as the checksum alone).")
        @Option(help: "Stream size in MiB.") var megabytes = 64
        @Option(help: "Bytes per chunk handed to the decoder (a transport read).") var chunk = 65536
        @Option(help: "Rounds; the best time of each pass counts.") var rounds = 7

        func run() throws {
            let r = CodecBenchmark(megabytes: megabytes, chunkSize: chunk, rounds: rounds).run()
            print("stream: \(r.streamBytes) bytes, \(r.frames) frames (avg \(r.streamBytes / r.frames) B), chunks of \(chunk) B, best of \(rounds)")
            print(String(format: "byte-sum pass        %8.0f MB/s", r.rate(r.sumSeconds) / 1e6))
            print(String(format: "decode (views)       %8.0f MB/s   ratio %.2f   (goal >= 0.5)", r.rate(r.viewSeconds) / 1e6, r.viewRatio))
            print(String(format: "decode (Packets)     %8.0f MB/s   ratio %.2f", r.rate(r.packetSeconds) / 1e6, r.packetRatio))
        }
    }

    struct Probe: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Median wall time of 'tuneup probe --device tcp:...' against a local simulator.",
            discussion: "Runs the tuneup binary built next to this one. Goal: median <= 50 ms.")
        @Option(help: "Number of probe runs.") var runs = 30
        @Option(help: "Path of the tuneup binary (default: next to tuneup-bench).") var tuneup: String?

        func run() throws {
            let binary = tuneup ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("tuneup").path
            guard FileManager.default.isExecutableFile(atPath: binary) else {
                throw ValidationError("no tuneup binary at \(binary); build it with: swift build -c release --product tuneup")
            }
            let r = try ProbeBenchmark(tuneup: binary, runs: runs).run()
            print("tuneup probe --device \(r.address), \(runs) runs (\(r.requestsPerProbe) requests each)")
            print(String(format: "median %.1f ms   p90 %.1f ms   min %.1f ms   max %.1f ms   (goal: median <= 50 ms)",
                         r.median * 1000, r.p90 * 1000, r.min * 1000, r.max * 1000))
        }
    }
}
