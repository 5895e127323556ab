import ArgumentParser
import Capture
import Foundation
import Headset
import Logging
import Support
import Terminal
import Transport
import TuneupKit
import USBTransport

/// Where the device is and how patiently to talk to it. Shared by every device command.
struct DeviceOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp(
        "Device address: " + Devices.addressSchemes.forms.joined(separator: ", ") + ".",
        discussion: "Defaults to $TUNEUP_DEVICE, else 'sim' (the built-in simulated headset). 'tuneup --help' says what each form means.",
        valueName: "addr"))
    var device: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds to wait for each reply before sending the request again.", valueName: "seconds"))
    var timeout: Double = 2

    @Option(parsing: .unconditional, help: ArgumentHelp("How many times to resend a request the device did not answer.", valueName: "n"))
    var retries: Int = 2

    @Flag(name: .shortAndLong, help: "Log every frame sent and received to stderr.")
    var verbose = false

    @Option(help: ArgumentHelp(
        "USB only: poll the device's reply report at this fixed interval (e.g. 50ms, as the vendor tools do).",
        discussion: "Default: poll at once after a request, then back off.", valueName: "interval"))
    var pollInterval: String?

    @Option(help: ArgumentHelp(
        "USB only: reach usb: addresses through the headset's hidraw node, libusb, or auto.",
        discussion: "auto (default): the hidraw node when the headset has one (its HID driver stays bound), else libusb.",
        valueName: "hidraw|libusb|auto"))
    var usbBackend: String = "auto"

    @OptionGroup var capture: CaptureOption

    /// `--poll-interval` as a duration (nil: adaptive polling).
    var pollIntervalDuration: Duration? { pollInterval.flatMap { parseDuration($0) } }

    func validate() throws {
        try checkSeconds(timeout, "--timeout")
        guard (0...20).contains(retries) else { throw ValidationError("--retries must be 0...20") }
        if let pollInterval, parseDuration(pollInterval).map({ $0 > .zero && $0 <= .seconds(10) }) != true {
            throw ValidationError("--poll-interval takes a duration like 50ms or 0.05s (up to 10 s), got '\(pollInterval)'")
        }
        do { _ = try USBBackend(parsing: usbBackend) } catch { throw ValidationError(error.message) }
        _ = try address()
    }

    /// $TUNEUP_DEVICE, when set and not empty: the device of every device command given no --device (the headset's
    /// and the wearable's commands alike).
    static var deviceFromEnvironment: String? {
        ProcessInfo.processInfo.environment["TUNEUP_DEVICE"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The parsed address (option, environment, or the simulator), of a headset's scheme (`Devices.headsetSchemes`).
    func address() throws -> DeviceAddress {
        let text = device ?? Self.deviceFromEnvironment ?? "sim"
        do {
            return try Devices.parseHeadsetAddress(text)
        } catch {
            throw ValidationError(error.message)
        }
    }

    var sessionOptions: LightXSession.Options {
        LightXSession.Options(timeout: .milliseconds(Int64(timeout * 1000)), retransmissions: retries)
    }

    /// How to open and talk to the device; `transportLogger` traces the link (with --verbose).
    func connectionOptions(transportLogger: Logger?) -> ConnectionOptions {
        var options = ConnectionOptions(session: sessionOptions, pollInterval: pollIntervalDuration, transportLogger: transportLogger)
        options.usbBackend = (try? USBBackend(parsing: usbBackend)) ?? .auto
        options.capture = capture.settings(.lightX)
        return options
    }
}

/// `--capture FILE.pcapng`, on every command that talks to a device (docs/capture.md): every link the command opens is
/// recorded in that file, one interface per link. The file is created when the first link opens (an existing file, a
/// symbolic link or a FIFO is refused with one line, exit 74); a full disk ends the capture with one warning.
struct CaptureOption: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Record every frame sent and received in this pcapng file (Wireshark, 'tuneup capture show').",
        discussion: "An existing file is never replaced.", valueName: "file.pcapng"))
    var capture: String?

    /// The settings of links of `family` written by `role` (nil without --capture).
    func settings(_ family: CaptureFamily, role: CaptureRole = .host) -> CaptureSettings? {
        capture.map { path in
            CaptureSettings(path: path, family: family, role: role, application: "tuneup \(TuneupVersion.line)",
                            warn: { printError("warning: \($0)") })
        }
    }
}

/// Output format shared by every command that prints results.
struct OutputOptions: ParsableArguments {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(help: ArgumentHelp("Output format: text for people, json for scripts (stable field names).", valueName: "format"))
    var format: Format = .text

    var json: Bool { format == .json }
}

/// Refuses a number of seconds outside (0, 3600] (or not a number) with one line naming the option.
func checkSeconds(_ value: Double, _ option: String) throws {
    guard value.isFinite, value > 0, value <= 3600 else {
        throw ValidationError("\(option) must be more than 0 and at most 3600 seconds, got \(value.formatted())")
    }
}

/// A duration in the one grammar of `Quantities`: "50ms", "0.5s", "250us", "2min", "1h" (a bare number needs a unit,
/// unless `bare` says what it counts).
func parseDuration(_ text: String, bare: Duration? = nil) -> Duration? { Quantities.parseDuration(text, bare: bare) }

/// An option counted in seconds that takes a duration (`--duration`): a number with ms, s, min or h, or a plain
/// number of seconds, more than 0 and at most `limit`; else one line naming the option, the forms and the range.
func durationOption(_ text: String, _ option: String, upTo limit: Duration) throws -> Duration {
    guard let d = parseDuration(text, bare: .seconds(1)), d > .zero, d <= limit else {
        let seconds = limit.components.seconds
        let most = seconds % 3600 == 0 ? "\(seconds / 3600) h" : seconds % 60 == 0 ? "\(seconds / 60) min" : "\(seconds) s"
        throw ValidationError("\(option) takes \(Quantities.durationForms) or a plain number of seconds, more than 0 and at most \(most); "
            + "got '\(text)'")
    }
    return d
}
