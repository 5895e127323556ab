import Testing

/// `--usb-backend` and `hidraw:` addresses at the command line.
@Suite struct USBBackendOptionTests {
    @Test func anUnknownBackendIsAUsageError() async throws {
        let r = try await CLI.run(["probe", "-d", "usb:1209:0001", "--usb-backend", "usbfs"])
        #expect(r.status == 64)
        #expect(r.stderrLines.first?.contains("unknown USB back end 'usbfs': expected hidraw, libusb or auto") == true, "\(r.stderr)")
    }

    /// A shared option: it may stand before the subcommand it belongs to.
    @Test func theOptionMayComeBeforeTheSubcommand() async throws {
        let r = try await CLI.run(["anc", "--usb-backend", "usbfs", "get", "-d", "usb:1209:0001"])
        #expect(r.status == 64)
        #expect(r.stderrLines.first?.contains("unknown USB back end 'usbfs'") == true, "\(r.stderr)")
    }

    @Test func aMissingHIDRawNodeIsUnavailable() async throws {
        let r = try await CLI.run(["probe", "-d", "hidraw:/nonexistent/hidraw9"])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines == ["tuneup: cannot open hidraw:/nonexistent/hidraw9: no such hidraw node (`tuneup devices` lists the headsets and their nodes)"])
    }

    @Test func aBadHIDRawAddressIsAUsageError() async throws {
        let r = try await CLI.run(["probe", "-d", "hidraw:hidraw0"])
        #expect(r.status == 64)
        #expect(r.stderrLines.first?.contains("bad hidraw address 'hidraw:hidraw0': expected hidraw:/dev/hidrawN") == true, "\(r.stderr)")
    }
}
