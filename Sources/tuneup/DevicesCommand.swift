import ArgumentParser
import Terminal
import TuneupKit
import USBTransport

/// `tuneup devices`: the USB headsets attached to this machine, with their identity strings.
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List attached USB headsets (or every USB device) with their identity strings and hidraw nodes.",
        discussion: """
            Known headsets are the simulated headset (1209:0001, bootloader 1209:0002) and the ids in \
            $TUNEUP_USB_IDS ("VVVV:PPPP[/BBBB],...", BBBB = the bootloader's product id). Each entry shows the \
            address to pass to --device. Strings come from the kernel's copy (sysfs), else from the device; \
            "permission denied" means the udev rule from tools/udev/ is not installed. "Reach by" says whether \
            usb: addresses take the headset's hidraw node (its HID driver stays bound) or libusb.

            Exit codes: 0 (also when nothing is attached), 64 bad $TUNEUP_USB_IDS, 69 no USB subsystem here.
            """)

    @Flag(help: "List every USB device, not only known headsets.")
    var all = false

    @OptionGroup var output: OutputOptions

    func run() async throws {
        let report: USBDevicesReport
        do {
            report = try await USBDevicesReport.scan(all: all, known: try USBBridge.knownDevices())
        } catch {
            throw failureExit(error)
        }
        try Output.emit(report, json: output.json) { report.text }
    }
}
