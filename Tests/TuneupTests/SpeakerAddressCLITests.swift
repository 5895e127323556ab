import Foundation
import Testing

/// The speaker commands take their addresses from the registry: `sim:speaker` in process, `speaker:HOST:PORT`,
/// `tcp:HOST:PORT`, HOST:PORT alone; anything else is the registry's one line and exit 64.
@Suite("tuneup speaker addresses")
struct SpeakerAddressCLITests {
    @Test func aSimulatedSpeakerInProcessAnswersOneSpeakerCommands() async throws {
        let info = try await CLI.run(["speaker", "info", "--index", "0", "--format", "json", "--speaker", "sim:speaker"])
        #expect(info.status == 0, "\(info.stderr)")
        let fields = try json(info.stdout)
        #expect(fields["deviceId"] as? UInt64 != nil && fields["ipAddress"] as? String == "127.0.0.1", "\(info.stdout)")
        // --device (-d) is the same option; a seed names another speaker.
        let volume = try await CLI.run(["speaker", "volume", "30", "--index", "0", "--format", "json", "-d", "sim:speaker:2"])
        #expect(volume.status == 0, "\(volume.stderr)")
        #expect(try json(volume.stdout)["volume"] as? Int == 30, "\(volume.stdout)")
        let other = try await CLI.run(["speaker", "info", "--index", "0", "--format", "json", "--device", "sim:speaker:2"])
        #expect(try json(other.stdout)["deviceId"] as? UInt64 != fields["deviceId"] as? UInt64, "\(other.stdout)")
    }

    @Test func aBadOrUnknownAddressIsTheRegistrysOneLine() async throws {
        for text in ["nowhere", "ftp:host", "speaker:127.0.0.1:0", "sim:speaker:x", "usb:1209:0001", "a:b:1"] {
            let r = try await CLI.run(["speaker", "info", "--index", "0", "--speaker", text])
            #expect(r.status == 64 && r.stderrLines.count == 1, "\(text): \(r.status) \(r.stderr)")
        }
        let unknown = try await CLI.run(["speaker", "list", "--speaker", "ftp:host"])
        #expect(unknown.stderrLines.first?.contains("unknown address scheme 'ftp'") == true, "\(unknown.stderr)")
        let target = try await CLI.run(["speaker", "list", "--discovery-target", "sim:speaker"])
        #expect(target.status == 64 && target.stderrLines.count == 1, "\(target.stderr)")
    }

    @Test func helpListsTheSpeakersAddressForms() async throws {
        let help = try await CLI.run(["speaker", "info", "--help"])
        for form in ["speaker:HOST:PORT", "tcp:HOST:PORT", "sim:speaker[:SEED]"] {
            #expect(help.stdout.contains(form), "\(form) missing from:\n\(help.stdout)")
        }
        let top = try await CLI.run(["--help"])
        #expect(top.stdout.contains("sim:speaker[:SEED]") && top.stdout.contains("speaker:HOST:PORT"), "\(top.stdout)")
    }
}
