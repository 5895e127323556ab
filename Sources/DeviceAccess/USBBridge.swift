import Foundation
import Logging
import Synchronization
import Transport
import USBTransport

/// Opens `usb:` and `hidraw:` addresses (`USBHeadsetOpener`): a headset's hidraw node when it has one (its kernel HID
/// driver stays bound: `HIDRawTransport`), else libusb (`USBHIDTransport`, which detaches the driver while open);
/// `backend` (`--usb-backend`) forces one.
///
/// - Known headsets: the simulator's ids (1209:0001, bootloader 1209:0002) plus `TUNEUP_USB_IDS`; a malformed
///   variable is a usage error naming the bad entry.
/// - The first open of an address fails at once when no device matches ("not found", exit 69). Opening an address
///   this bridge has opened before goes through the same back end and waits up to `reconnectWait` for it to
///   reappear, rescanning every 50 ms: that is the updater reconnecting to a device that re-enumerates after a jump to
///   its bootloader or a reboot (a `hidraw:` address then follows the device at its USB port to its new node).
/// - `pollInterval` is `--poll-interval` (nil: adaptive polling).
public struct USBBridge: Sendable {
    /// Fixed reply-poll interval (nil: adaptive).
    public var pollInterval: Duration?
    /// Which back end `usb:` addresses go through.
    public var backend: USBBackend
    /// Passed to the transport (open/close at debug, every packet at trace).
    public var logger: Logger?
    /// How long a re-open of an address waits for the device to come back.
    public var reconnectWait: Duration = .seconds(5)

    private let opened = OpenedAddresses()

    public init(pollInterval: Duration?, backend: USBBackend = .auto, logger: Logger? = nil) {
        self.pollInterval = pollInterval
        self.backend = backend
        self.logger = logger
    }

    /// Opens `address` (a `usb:` or `hidraw:` address). Throws `SettingError` for a malformed `TUNEUP_USB_IDS` (a
    /// usage error: exit 64 in the CLI, not a connection failure), `TransportError` otherwise.
    public func open(_ address: DeviceAddress) async throws -> any Transport {
        let known = try Self.knownDevices()
        let previous = opened.previous(address.description)
        let opener = USBHeadsetOpener(backend: backend, pollInterval: pollInterval, knownDevices: known, logger: logger)
        let (transport, how) = try await opener.open(address, previous: previous, wait: reconnectWait)
        opened.record(address.description, how)
        return transport
    }

    /// The known headsets: the standard table plus `TUNEUP_USB_IDS`. A malformed variable is a `SettingError`
    /// naming the bad entry.
    public static func knownDevices(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(SettingError) -> USBKnownDevices {
        do {
            return try USBKnownDevices.fromEnvironment(environment)
        } catch {
            throw SettingError(variable: USBKnownDevices.environmentVariable, message: error.message)
        }
    }

    /// The addresses opened so far and how (shared by copies of the bridge).
    private final class OpenedAddresses: Sendable {
        private let addresses = Mutex<[String: USBHeadsetOpener.Opened]>([:])
        func previous(_ address: String) -> USBHeadsetOpener.Opened? { addresses.withLock { $0[address] } }
        func record(_ address: String, _ how: USBHeadsetOpener.Opened) { addresses.withLock { $0[address] = how } }
    }
}
