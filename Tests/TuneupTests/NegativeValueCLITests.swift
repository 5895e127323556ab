import Foundation
import Testing

/// A negative number after an option (`--duration -1`): the parser read `-1` as an option and said "Missing value",
/// both where a negative is refused (the check that says why never ran) and where it is documented
/// (`speaker receive --latency-ms -20`). `CommandRunner` hands it over as `--option=-1` (issue 30 item 17).
@Suite struct NegativeValueCLITests {
    /// Refused with the option's own one line and 64, never "Missing value".
    @Test(arguments: [
        ["speaker", "events", "--duration", "-1"],
        ["sim", "speaker", "--loss", "-1"],
        ["records", "spc", "--window", "-1", "--db", "/nonexistent/records.sqlite"],
        ["flash", "firmware-images/app-2.0.0.img", "--window", "-1"],
        ["line", "serve", "--window", "-1", "--db", "postgres://nobody@127.0.0.1:1/none"],
        ["monitor", "--duration", "-1"],
        ["probe", "--timeout", "-1"],
    ])
    func aRefusedNegativeSaysWhy(_ args: [String]) async throws {
        let r = try await CLI.run(args, timeout: 30)
        let lines = r.stderr.split(separator: "\n")
        #expect(r.status == 64, "\(args): exit \(r.status), \(r.stderr)")
        #expect(lines.count == 1 && !r.stderr.contains("Missing value"), "\(args): \(r.stderr)")
        #expect(r.stderr.contains(args[args.firstIndex(where: { $0 == "-1" })! - 1]), "\(args): \(r.stderr)")
    }

    /// A negative the option takes: `--latency-ms -20` reaches the receiver (which then cannot open a device that does
    /// not exist: 69), not the parser.
    @Test func aNegativeTheOptionTakesIsTaken() async throws {
        let r = try await CLI.run(["speaker", "receive", "--latency-ms", "-20", "--alsa-device", "tuneup-no-such-device",
                                   "--listen", "tcp:127.0.0.1:0", "--discovery-port", "0"], timeout: 30)
        #expect(r.status == 69, "exit \(r.status): \(r.stderr)")
        #expect(!r.stderr.contains("Missing value") && !r.stderr.contains("latency"), "\(r.stderr)")
    }

    /// Words after `--` are the command's own (an equaliser's negative gains): left as they are.
    @Test func wordsAfterTheTerminatorAreLeftAlone() async throws {
        let r = try await CLI.run(["eq", "set", "--preset", "user", "--", "-3", "2", "1", "0", "0", "0", "1", "2", "3", "4"], timeout: 30)
        #expect(r.status == 0, "exit \(r.status): \(r.stderr)")
    }
}
