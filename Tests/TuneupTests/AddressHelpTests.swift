import Testing
import Transport
import TuneupKit

/// `tuneup --help` lists the address schemes from the registry, so a registered scheme cannot be left out.
@Suite struct AddressHelpTests {
    /// Words separated by single spaces (the help wraps lines where it likes).
    static func words(_ text: String) -> String {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
    }

    @Test func helpListsEveryRegisteredScheme() async throws {
        let r = try await CLI.run(["--help"])
        #expect(r.status == 0)
        let help = Self.words(r.stdout)
        #expect(Devices.addressSchemes.schemes.count >= 6)
        for scheme in Devices.addressSchemes.schemes {
            #expect(help.contains(Self.words(scheme.form) + " " + Self.words(scheme.summary)), "help lacks \(scheme.name)")
        }
    }

    @Test func aDeviceOptionTakesTheExplicitHeadsetForm() async throws {
        let r = try await CLI.run(["probe", "-d", "sim:headset", "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("\"device\" : \"sim\"") || r.stdout.contains("\"device\":\"sim\""), "\(r.stdout)")
        let bad = try await CLI.run(["probe", "-d", "ftp:host"])
        #expect(bad.status == 64)
        #expect(bad.stderrLines == ["tuneup: unknown address scheme 'ftp'; expected sim, tcp:, serial:, usb:, hidraw: or bt: (see 'tuneup probe --help')"])
    }
}
