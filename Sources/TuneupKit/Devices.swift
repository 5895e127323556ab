// The tools see device access as one module: TuneupKit is DeviceAccess plus the simulators.
@_exported import DeviceAccess
import Firmware
import FirmwareUpdate
import Headset
import Logging
import SpeakerSession
import SpeakerSimulator
import Transport
import WearableSimulator

extension DeviceScheme {
    /// `sim[:STATEFILE]`: the built-in simulated headset (its addresses are `sim:headset`'s, opened there).
    public static let simulatedHeadset = builtIn("sim", summary: "the built-in simulated headset, in process; STATEFILE: where it is kept")
    /// `sim:headset[:STATEFILE]`: the same headset, in process (`SimulatorBridge`).
    public static let simulatedHeadsetNamed = builtIn(
        "sim:headset", summary: "the same headset, named explicitly (sim:headset:FILE is sim:FILE)"
    ) { _ in
        { address, _ in
            guard case let .simulator(statePath) = address else {
                throw TransportError(.invalidAddress, "\(address) is not a simulated headset's address")
            }
            return try await SimulatorBridge.openInProcess(statePath: statePath)
        }
    }
    /// `sim:wearable[:SEED]`: an in-process simulated wearable (`WearableSimulatorBridge`).
    public static let simulatedWearable = DeviceScheme(WearableSimulatorBridge.addressScheme) { _ in
        { address, _ in try WearableSimulatorBridge.open(address) }
    }
    /// `sim:speaker[:SEED]`: an in-process simulated speaker (`SpeakerSimulatorBridge`), its audio on the loopback.
    public static let simulatedSpeaker = DeviceScheme(SpeakerSimulatorBridge.addressScheme, localHost: InProcessSpeaker.audioHost) { _ in
        { address, _ in try SpeakerSimulatorBridge.open(address) }
    }
}

/// Every kind of device the tools reach, composed once: `registry` is `DeviceRegistry.real`'s back ends with the
/// in-process simulators among them, in the order help lists them. The CLI and the benchmarks use it (and pass it to
/// the station); the members below are `registry`'s.
///
/// A new kind of device is one `DeviceScheme` in `registry` (its parser and its opener).
public enum Devices {
    /// The tools' device registry.
    public static let registry = DeviceRegistry([
        .simulatedHeadset, .simulatedHeadsetNamed, .tcp, .serial, .usb, .hidraw, .bluetooth, .simulatedWearable, .ble, .speaker, .simulatedSpeaker,
    ])

    /// Every address scheme the tools accept, in the order help lists them.
    public static var addressSchemes: AddressSchemes { registry.addressSchemes }

    /// `DeviceRegistry.parseAddress` on `registry`.
    public static func parseAddress(_ text: String) throws(TransportError) -> DeviceAddress {
        try registry.parseAddress(text)
    }

    /// `DeviceRegistry.connector` on `registry`: every scheme's opener plugged in.
    public static func connector(_ options: ConnectionOptions = .init()) -> TransportConnector {
        registry.connector(options)
    }

    /// `DeviceRegistry.openHeadset` on `registry`.
    public static func openHeadset(
        _ address: DeviceAddress, options: ConnectionOptions = .init(), logger: Logger = Logger(label: "tuneup.session")
    ) async throws -> Headset {
        try await registry.openHeadset(address, options: options, logger: logger)
    }

    /// `DeviceRegistry.openSession` on `registry`.
    public static func openSession(
        _ address: DeviceAddress, options: ConnectionOptions = .init(), logger: Logger = Logger(label: "tuneup.session")
    ) async throws -> LightXSession {
        try await registry.openSession(address, options: options, logger: logger)
    }

    /// The schemes whose devices speak LightX (`DeviceRegistry.headsetSchemes`).
    public static var headsetSchemes: [String] { DeviceRegistry.headsetSchemes }
    /// The schemes whose devices are wearables (`DeviceRegistry.wearableSchemes`).
    public static var wearableSchemes: [String] { DeviceRegistry.wearableSchemes }

    /// `DeviceRegistry.parseHeadsetAddress` on `registry`.
    public static func parseHeadsetAddress(_ text: String) throws(TransportError) -> DeviceAddress {
        try registry.parseHeadsetAddress(text)
    }

    /// `DeviceRegistry.parseWearableAddress` on `registry`.
    public static func parseWearableAddress(_ text: String) throws(TransportError) -> DeviceAddress {
        try registry.parseWearableAddress(text)
    }

    /// The forms of the speakers' addresses, as `registry` spells them.
    public static var speakerForms: [String] { registry.speakerForms }

    /// `DeviceRegistry.parseSpeakerAddress` on `registry`.
    public static func parseSpeakerAddress(_ text: String) throws(TransportError) -> DeviceAddress {
        try registry.parseSpeakerAddress(text)
    }

    /// `DeviceRegistry.openSpeaker` on `registry`.
    public static func openSpeaker(
        _ address: DeviceAddress, options: ConnectionOptions = .init(), requestOptions: RequestOptions = RequestOptions(),
        logger: Logger = Logger(label: "tuneup.speaker")
    ) async throws -> SpeakerSession {
        try await registry.openSpeaker(address, options: options, requestOptions: requestOptions, logger: logger)
    }

    /// `DeviceRegistry.openSpeakers` on `registry`.
    public static func openSpeakers(
        _ addresses: [DeviceAddress], options: ConnectionOptions = .init(), requestOptions: RequestOptions = RequestOptions()
    ) async throws -> SpeakerController {
        try await registry.openSpeakers(addresses, options: options, requestOptions: requestOptions)
    }

    /// `DeviceRegistry.updater` on `registry`.
    public static func updater(
        image: FirmwareImage, address: DeviceAddress, options: UpdateOptions = .init(),
        connection: ConnectionOptions = .init(), logger: Logger = Logger(label: "tuneup.update")
    ) -> FirmwareUpdater {
        registry.updater(image: image, address: address, options: options, connection: connection, logger: logger)
    }

    /// `DeviceRegistry.bootloaderClient` on `registry`.
    public static func bootloaderClient(
        address: DeviceAddress, wait: Duration, connection: ConnectionOptions = .init(),
        logger: Logger = Logger(label: "tuneup.bootloader")
    ) -> BootloaderClient {
        registry.bootloaderClient(address: address, wait: wait, connection: connection, logger: logger)
    }

    /// The port addresses of every attached known USB headset (`DeviceRegistry.attachedUSBHeadsets`).
    public static func attachedUSBHeadsets() async throws -> [String] {
        try await DeviceRegistry.attachedUSBHeadsets()
    }

    /// Whether a unit is at `address` now, without sending it anything (`DeviceRegistry.isPresent`).
    public static func isPresent(_ address: DeviceAddress, connector: TransportConnector) async -> Bool {
        await DeviceRegistry.isPresent(address, connector: connector)
    }

    /// The longest summary that fits a help line (80 columns) after its indent.
    public static var summaryWidth: Int { DeviceRegistry.summaryWidth }

    /// The address schemes for help texts: each scheme's form, then its summary indented on the next line.
    public static func schemeLines(indent: String = "  ") -> [String] {
        registry.schemeLines(indent: indent)
    }

    /// The address schemes as the Markdown table of docs/cli.md.
    public static var schemeTable: String { registry.schemeTable }
}
