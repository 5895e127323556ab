import BluetoothTransport
import Foundation
import Headset
import Logging
import SpeakerSimulator
import Transport
import WearableSimulator

/// How the tools open a device and talk to it: what `--timeout`, `--retries`, `--poll-interval`, `--verbose` and a
/// benchmark's link conditions say.
public struct ConnectionOptions: Sendable {
    /// Reply timeout, retransmissions and the rest of the session's behaviour.
    public var session: LightXSession.Options
    /// USB only: poll for replies at this fixed interval (nil: adaptive polling).
    public var pollInterval: Duration?
    /// When set, every opened link is wrapped in a `ConditionedTransport` with these conditions.
    public var linkConditions: LinkConditions?
    /// Limit for resolving and connecting TCP addresses.
    public var connectTimeout: Duration
    /// Where the back ends log opening, closing and (at trace) every chunk; nil: they stay quiet.
    public var transportLogger: Logger?

    public init(session: LightXSession.Options = .init(), pollInterval: Duration? = nil, linkConditions: LinkConditions? = nil,
                connectTimeout: Duration = .seconds(5), transportLogger: Logger? = nil) {
        self.session = session
        self.pollInterval = pollInterval
        self.linkConditions = linkConditions
        self.connectTimeout = connectTimeout
        self.transportLogger = transportLogger
    }
}

/// Every kind of device the tools reach, composed once: the address schemes, the connector with every back end
/// plugged in, and opening a device by address. The CLI, the benchmarks and the provisioning station use these.
///
/// A new kind of device is one scheme in `addressSchemes` (its parser) and one opener in `connector(_:)`.
public enum Devices {
    /// Every address scheme the tools accept, in the order help lists them (built-in ones: `AddressSchemes.builtIn`,
    /// with what each means here).
    public static let addressSchemes: AddressSchemes = {
        let builtIn = AddressSchemes.builtIn
        // One line each (at most `summaryWidth` characters): help prints them under the forms.
        let summaries: [(String, String)] = [
            ("sim", "the built-in simulated headset, in process; STATEFILE: where it is kept"),
            ("sim:headset", "the same headset, named explicitly (sim:headset:FILE is sim:FILE)"),
            ("tcp", "a LightX device (or a 'sim headset' server) on TCP; IPv6: tcp:[::1]:PORT"),
            ("serial", "a serial line, pty or /dev/rfcommN (raw mode, SPP framing)"),
            ("usb", "USB HID through libusb; TUNEUP_USB_IDS=VVVV:PPPP/BBBB,... adds models"),
            ("bt", "Bluetooth RFCOMM (no CHANNEL: SDP finds it); adapter: \(BluetoothBridge.adapterVariable)"),
        ]
        var schemes = AddressSchemes()
        for (name, summary) in summaries {
            if let scheme = builtIn.scheme(named: name) { schemes.register(scheme.summarized(summary)) }
        }
        for scheme in builtIn.schemes where schemes.scheme(named: scheme.name) == nil { schemes.register(scheme) }
        schemes.register(WearableSimulatorBridge.addressScheme)
        schemes.register(BLEBridge.addressScheme)
        schemes.register(SpeakerBridge.addressScheme)
        schemes.register(SpeakerSimulatorBridge.addressScheme)
        return schemes
    }()

    /// Parses an address of any scheme in `addressSchemes`. Throws `TransportError(.invalidAddress)` (one line).
    public static func parseAddress(_ text: String) throws(TransportError) -> DeviceAddress {
        try addressSchemes.parse(text)
    }

    /// The connector for every scheme in `addressSchemes`: TCP and serial, the in-process simulated headset, USB
    /// (`USBBridge`: the known-device table, a first open that fails at once, re-opens that wait for the device to
    /// re-enumerate; shared by copies of the connector) and Bluetooth (`BluetoothBridge`, `TUNEUP_BT_ADAPTER`).
    public static func connector(_ options: ConnectionOptions = .init()) -> TransportConnector {
        let usb = USBBridge(pollInterval: options.pollInterval, logger: options.transportLogger)
        var connector = TransportConnector(connectTimeout: options.connectTimeout)
        connector.register("sim:headset") { address, _ in
            guard case let .simulator(statePath) = address else {
                throw TransportError(.invalidAddress, "\(address) is not a simulated headset's address")
            }
            return try await SimulatorBridge.openInProcess(statePath: statePath)
        }
        connector.register(WearableSimulatorBridge.scheme) { address, _ in try WearableSimulatorBridge.open(address) }
        connector.register("usb") { address, _ in try await usb.open(address) }
        connector.register("bt") { address, context in try await BluetoothBridge.open(address, logger: context.logger) }
        connector.register(BLEBridge.scheme) { address, context in try await BLEBridge.open(address, logger: context.logger) }
        connector.register(SpeakerBridge.scheme) { address, context in try await SpeakerBridge.open(address, context: context) }
        connector.register(SpeakerSimulatorBridge.scheme) { address, _ in try SpeakerSimulatorBridge.open(address) }
        connector.logger = options.transportLogger
        connector.linkConditions = options.linkConditions
        return connector
    }

    /// Opens the device at `address` and starts a typed session on it. Throws `HeadsetError` (a link failure is
    /// `HeadsetError.transport`), `SettingError` (a bad `TUNEUP_USB_IDS`), `SimulatorError` (a bad state file).
    public static func openHeadset(
        _ address: DeviceAddress, options: ConnectionOptions = .init(), logger: Logger = Logger(label: "tuneup.session")
    ) async throws -> Headset {
        try await Headset.open(address, connector: connector(options), options: options.session, logger: logger)
    }

    /// Opens the device at `address` and starts a LightX session on it, errors as for `openHeadset`.
    public static func openSession(
        _ address: DeviceAddress, options: ConnectionOptions = .init(), logger: Logger = Logger(label: "tuneup.session")
    ) async throws -> LightXSession {
        try await openHeadset(address, options: options, logger: logger).session
    }

    /// The schemes whose devices speak LightX: what the headset commands (probe, flash, anc, ...) and the station take.
    public static let headsetSchemes = ["sim", "sim:headset", "tcp", "serial", "usb", "bt"]
    /// The schemes whose devices are wearables: what the wearable commands take.
    public static let wearableSchemes = [WearableSimulatorBridge.scheme, BLEBridge.scheme, "tcp", "serial"]

    /// Parses the address of a headset: any scheme of `headsetSchemes`. Another family's address (a speaker's, a
    /// wearable's) is refused at once with one line naming the headset forms, instead of being opened and timing out.
    public static func parseHeadsetAddress(_ text: String) throws(TransportError) -> DeviceAddress {
        try parseAddress(text, family: "headset", schemes: headsetSchemes)
    }

    /// Parses the address of a wearable: any scheme of `wearableSchemes`; another family's address is refused with one
    /// line naming the wearable forms.
    public static func parseWearableAddress(_ text: String) throws(TransportError) -> DeviceAddress {
        try parseAddress(text, family: "wearable", schemes: wearableSchemes)
    }

    private static func parseAddress(_ text: String, family: String, schemes: [String]) throws(TransportError) -> DeviceAddress {
        // Resolved against every scheme (so that another family's address is recognised as such), but a scheme no one
        // knows is answered with this family's forms.
        guard addressSchemes.resolve(text) != nil else {
            let own = AddressSchemes(addressSchemes.schemes.filter { schemes.contains($0.name) })
            return try own.parse(text)
        }
        let address = try parseAddress(text)
        guard schemes.contains(address.scheme) else {
            let forms = schemes.compactMap { addressSchemes.scheme(named: $0)?.form }
            throw TransportError(.invalidAddress, "'\(text)' is not a \(family)'s address: expected \(forms.joined(separator: ", "))")
        }
        return address
    }

    /// The longest summary that fits a help line (80 columns) after its indent.
    public static let summaryWidth = 74

    /// The address schemes for help texts: each scheme's form, then its summary indented on the next line.
    public static func schemeLines(indent: String = "  ") -> [String] {
        addressSchemes.schemes.flatMap { scheme in [indent + scheme.form, indent + "    " + scheme.summary] }
    }

    /// The address schemes as the Markdown table of docs/cli.md.
    public static var schemeTable: String {
        (["| address | link |", "|---|---|"] + addressSchemes.schemes.map { scheme in
            "| " + scheme.form.components(separatedBy: " or ").map { "`\($0)`" }.joined(separator: ", ") + " | \(scheme.summary) |"
        }).joined(separator: "\n")
    }
}
