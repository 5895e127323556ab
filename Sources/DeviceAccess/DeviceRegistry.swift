import Capture
import Foundation
import Headset
import Logging
import Transport
import USBTransport

/// How the tools open a device and talk to it: what `--timeout`, `--retries`, `--poll-interval`, `--verbose` and a
/// benchmark's link conditions say.
public struct ConnectionOptions: Sendable {
    /// Reply timeout, retransmissions and the rest of the session's behaviour.
    public var session: LightXSession.Options
    /// USB only: poll for replies at this fixed interval (nil: adaptive polling).
    public var pollInterval: Duration?
    /// USB only: hidraw, libusb, or the hidraw node when there is one (`--usb-backend`).
    public var usbBackend: USBBackend = .auto
    /// When set, every opened link is wrapped in a `ConditionedTransport` with these conditions.
    public var linkConditions: LinkConditions?
    /// Limit for resolving and connecting TCP addresses.
    public var connectTimeout: Duration
    /// Where the back ends log opening, closing and (at trace) every chunk; nil: they stay quiet.
    public var transportLogger: Logger?
    /// `--capture FILE`: when set, every opened link is recorded in that pcapng file, one interface per link
    /// (docs/capture.md).
    public var capture: CaptureSettings?

    public init(session: LightXSession.Options = .init(), pollInterval: Duration? = nil, linkConditions: LinkConditions? = nil,
                connectTimeout: Duration = .seconds(5), transportLogger: Logger? = nil, capture: CaptureSettings? = nil) {
        self.session = session
        self.pollInterval = pollInterval
        self.linkConditions = linkConditions
        self.connectTimeout = connectTimeout
        self.transportLogger = transportLogger
        self.capture = capture
    }
}

/// One kind of device address in a `DeviceRegistry`: its scheme (the parser, the form and summary help shows) and,
/// when addresses of this kind carry the scheme's name (`DeviceAddress.scheme`), how a connector opens them.
public struct DeviceScheme: Sendable {
    /// Makes the opener of one connector from the connection's options (what an opener keeps, such as USB's re-open
    /// policy, is shared by the copies of that connector and by nothing else).
    public typealias MakeOpener = @Sendable (ConnectionOptions) -> TransportConnector.Opener

    /// The address scheme (its name is the key of the opener).
    public let address: AddressScheme
    /// Where a device of this scheme is reached beside its link (a speaker's audio) when its address names no host:
    /// the loopback for an in-process device; nil otherwise.
    public let localHost: String?
    /// nil: the addresses are opened by `TransportConnector` itself (`tcp`, `serial`) or carry another entry's scheme
    /// (`sim` is `sim:headset`).
    public let makeOpener: MakeOpener?

    /// The scheme's name.
    public var name: String { address.name }

    public init(_ address: AddressScheme, localHost: String? = nil, opener: MakeOpener? = nil) {
        self.address = address
        self.localHost = localHost
        self.makeOpener = opener
    }

    /// The scheme of `AddressSchemes.builtIn` named `name`, with `summary` (what the address means to the tools).
    public static func builtIn(_ name: String, summary: String, opener: MakeOpener? = nil) -> DeviceScheme {
        guard let scheme = AddressSchemes.builtIn.scheme(named: name) else {
            preconditionFailure("'\(name)' is not a scheme of AddressSchemes.builtIn")
        }
        return DeviceScheme(scheme.summarized(summary), opener: opener)
    }

    // The real back ends, one line of summary each (at most `DeviceRegistry.summaryWidth` characters): help prints
    // them under the forms.

    /// `tcp:HOST:PORT` (opened by `TransportConnector`).
    public static let tcp = builtIn("tcp", summary: "a LightX device (or a 'sim headset' server) on TCP; IPv6: tcp:[::1]:PORT")
    /// `serial:PATH` (opened by `TransportConnector`).
    public static let serial = builtIn("serial", summary: "a serial line, pty or /dev/rfcommN (raw mode, SPP framing)")
    /// `usb:` by ids or by port, through `USBBridge` (one bridge per connector: its re-open policy).
    public static let usb = builtIn("usb", summary: "USB HID (hidraw or libusb); TUNEUP_USB_IDS=VVVV:PPPP/BBBB,... adds models") { options in
        let usb = USBBridge(pollInterval: options.pollInterval, backend: options.usbBackend, logger: options.transportLogger)
        return { address, _ in try await usb.open(address) }
    }
    /// `hidraw:/dev/hidrawN`, a headset's hidraw node, through `USBBridge`.
    public static let hidraw = DeviceScheme(HIDRawAddress.addressScheme) { options in
        let usb = USBBridge(pollInterval: options.pollInterval, backend: .hidraw, logger: options.transportLogger)
        return { address, _ in try await usb.open(address) }
    }
    /// `bt:` (RFCOMM) through `BluetoothBridge`.
    public static let bluetooth = builtIn(
        "bt", summary: "Bluetooth RFCOMM (no CHANNEL: SDP finds it); adapter: \(BluetoothBridge.adapterVariable)"
    ) { _ in
        { address, context in try await BluetoothBridge.open(address, logger: context.logger) }
    }
    /// `ble:` (ATT over L2CAP LE) through `BLEBridge`.
    public static let ble = DeviceScheme(BLEBridge.addressScheme) { _ in
        { address, context in try await BLEBridge.open(address, logger: context.logger) }
    }
    /// `speaker:HOST:PORT`, a speaker's control port, through `SpeakerBridge`.
    public static let speaker = DeviceScheme(SpeakerBridge.addressScheme) { _ in
        { address, context in try await SpeakerBridge.open(address, context: context) }
    }
}

/// Kinds of device composed once: the address schemes, the connector with their openers plugged in, and opening a
/// device by address. Passed explicitly to what opens devices (the station takes one in its options); the tools'
/// composition, simulators included, is `Devices.registry` in TuneupKit.
///
/// A new kind of device is one `DeviceScheme` (its parser and its opener) in the list a registry is made of.
public struct DeviceRegistry: Sendable {
    /// The kinds of device, in the order help lists them.
    public let entries: [DeviceScheme]
    /// Every address scheme of `entries`, in their order.
    public let addressSchemes: AddressSchemes

    /// A registry of `entries` (in help order; a later entry of the same name replaces an earlier one).
    public init(_ entries: [DeviceScheme]) {
        var unique: [DeviceScheme] = []
        for entry in entries {
            if let index = unique.firstIndex(where: { $0.name == entry.name }) { unique[index] = entry } else { unique.append(entry) }
        }
        self.entries = unique
        self.addressSchemes = AddressSchemes(unique.map(\.address))
    }

    /// The real back ends, no simulator: TCP, serial, USB (libusb and hidraw), Bluetooth RFCOMM and LE, speakers on the network.
    public static let real = DeviceRegistry([.tcp, .serial, .usb, .hidraw, .bluetooth, .ble, .speaker])

    /// The entry named `name`, if registered.
    public func entry(named name: String) -> DeviceScheme? { entries.first { $0.name == name } }

    /// Parses an address of any scheme in `addressSchemes`. Throws `TransportError(.invalidAddress)` (one line).
    public func parseAddress(_ text: String) throws(TransportError) -> DeviceAddress {
        try addressSchemes.parse(text)
    }

    /// The connector for every scheme in `addressSchemes`: TCP and serial (Transport's own), and each entry's opener
    /// made from `options` (USB: `USBBridge`, the known-device table, a first open that fails at once, re-opens that
    /// wait for the device to re-enumerate, shared by copies of the connector; Bluetooth: `BluetoothBridge`,
    /// `TUNEUP_BT_ADAPTER`). With `options.capture`, every link it opens is recorded (one interface each).
    public func connector(_ options: ConnectionOptions = .init()) -> TransportConnector {
        var connector = TransportConnector(connectTimeout: options.connectTimeout)
        for entry in entries {
            if let makeOpener = entry.makeOpener { connector.register(entry.name, opener: makeOpener(options)) }
        }
        connector.logger = options.transportLogger
        connector.linkConditions = options.linkConditions
        guard let capture = options.capture else { return connector }
        // Every scheme's link is recorded as it opens (after its conditions, so the capture shows what the session saw).
        let inner = connector
        connector.linkConditions = nil  // applied by `inner`
        for scheme in ["tcp", "serial"] + entries.map(\.name) where inner.canOpen(scheme) {
            connector.register(scheme) { address, _ in
                // The interface is named by the address as given (`sim`, `tcp:127.0.0.1:4100`), not by the back end's peer.
                try await capture.wrap(try await inner.open(address), family: capture.family(ofScheme: address.scheme), name: address.description)
            }
        }
        return connector
    }

    /// Opens the device at `address` and starts a typed session on it. Throws `HeadsetError` (a link failure is
    /// `HeadsetError.transport`), `SettingError` (a bad `TUNEUP_USB_IDS`), and whatever an opener throws (a simulator's
    /// `SimulatorError` for a bad state file).
    public func openHeadset(
        _ address: DeviceAddress, options: ConnectionOptions = .init(), logger: Logger = Logger(label: "tuneup.session")
    ) async throws -> Headset {
        try await Headset.open(address, connector: connector(options), options: options.session, logger: logger)
    }

    /// Opens the device at `address` and starts a LightX session on it, errors as for `openHeadset`.
    public func openSession(
        _ address: DeviceAddress, options: ConnectionOptions = .init(), logger: Logger = Logger(label: "tuneup.session")
    ) async throws -> LightXSession {
        try await openHeadset(address, options: options, logger: logger).session
    }

    /// The schemes whose devices speak LightX: what the headset commands (probe, flash, anc, ...) and the station take
    /// (those a registry lacks are left out of its texts).
    public static let headsetSchemes = ["sim", "sim:headset", "tcp", "serial", "usb", HIDRawAddress.scheme, "bt"]
    /// The schemes whose devices are wearables: what the wearable commands take.
    public static let wearableSchemes = ["sim:wearable", BLEBridge.scheme, "tcp", "serial"]

    /// Parses the address of a headset: any scheme of `headsetSchemes`. Another family's address (a speaker's, a
    /// wearable's) is refused at once with one line naming the headset forms, instead of being opened and timing out.
    public func parseHeadsetAddress(_ text: String) throws(TransportError) -> DeviceAddress {
        try parseAddress(text, family: "headset", schemes: Self.headsetSchemes)
    }

    /// Parses the address of a wearable: any scheme of `wearableSchemes`; another family's address is refused with one
    /// line naming the wearable forms.
    public func parseWearableAddress(_ text: String) throws(TransportError) -> DeviceAddress {
        try parseAddress(text, family: "wearable", schemes: Self.wearableSchemes)
    }

    private func parseAddress(_ text: String, family: String, schemes: [String]) throws(TransportError) -> DeviceAddress {
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
        // Port 0 is a listener's "any free port" (`--listen tcp:HOST:0`); no device is reached there.
        if case .tcp(_, 0) = address {
            throw TransportError(.invalidAddress, "'\(text)': port 0 is no device's port (it means \"any free port\" to a listener); give the port the device listens on, 1...65535")
        }
        return address
    }

    /// The longest summary that fits a help line (80 columns) after its indent.
    public static let summaryWidth = 74

    /// The address schemes for help texts: each scheme's form, then its summary indented on the next line.
    public func schemeLines(indent: String = "  ") -> [String] {
        addressSchemes.schemes.flatMap { scheme in [indent + scheme.form, indent + "    " + scheme.summary] }
    }

    /// The address schemes as the Markdown table of docs/cli.md.
    public var schemeTable: String {
        (["| address | link |", "|---|---|"] + addressSchemes.schemes.map { scheme in
            "| " + scheme.form.components(separatedBy: " or ").map { "`\($0)`" }.joined(separator: ", ") + " | \(scheme.summary) |"
        }).joined(separator: "\n")
    }
}
