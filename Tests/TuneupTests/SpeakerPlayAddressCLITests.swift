import Foundation
import Testing

/// Issue 30 items 15 and 17: speaker addresses that can never reach a speaker are refused before anything is opened,
/// with a line that says what is wrong.
@Suite("tuneup speaker play/list: addresses refused")
struct SpeakerPlayAddressCLITests {
    /// `0.0.0.0` and `::` are where a speaker listens on every interface, not where one is reached: exit 64 for `list`
    /// and `play`, in every form of the address (they were accepted, exit 0).
    @Test func theUnspecifiedHostIsRefused() async throws {
        for text in ["0.0.0.0:4600", "speaker:0.0.0.0:4600", "tcp:0.0.0.0:4600", "[::]:4600", "speaker:[::]:4600"] {
            for command in [["speaker", "list"], ["speaker", "play", "/nonexistent/song.wav"]] {
                let r = try await CLI.run(command + ["--speaker", text])
                #expect(r.status == 64 && r.stderrLines.count == 1, "\(command) \(text): \(r.status) \(r.stderr)")
                #expect(r.stderr.contains("every interface"), "\(command) \(text): \(r.stderr)")
            }
        }
    }

    /// A port beyond 65535 is said to be out of range (it was "unknown address scheme '127.0.0.1'").
    @Test func aPortOutOfRangeIsSaidSo() async throws {
        for text in ["127.0.0.1:70000", "speaker:127.0.0.1:70000", "[::1]:99999"] {
            let r = try await CLI.run(["speaker", "list", "--speaker", text])
            #expect(r.status == 64 && r.stderrLines.count == 1, "\(text): \(r.status) \(r.stderr)")
            #expect(r.stderr.contains("is out of range (1...65535)") && !r.stderr.contains("scheme"), "\(text): \(r.stderr)")
        }
    }
}
