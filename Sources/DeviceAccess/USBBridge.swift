import Foundation
import Logging
import Synchronization
import Transport
import USBTransport

/// Opens `usb:` addresses with the USB back end (`USBHIDTransport`: libusb, LightX in HID feature reports).
///
/// - Known headsets: the simulator's ids (1209:0001, bootloader 1209:0002) plus `TUNEUP_USB_IDS`; a malformed
///   variable is a usage error naming the bad entry.
/// - The first open of an address fails at once when no device matches ("not found", exit 69). Opening an address
///   this bridge has opened before waits up to `reconnectWait` for it to reappear, rescanning every 50 ms: that is
///   the updater reconnecting to a device that re-enumerates after a jump to its bootloader or a reboot.
/// - `pollInterval` is `--poll-interval` (nil: adaptive polling).
public struct USBBridge: Sendable {
    /// Fixed reply-poll interval (nil: adaptive).
    public var pollInterval: Duration?
    /// Passed to the transport (open/close at debug, every packet at trace).
    public var logger: Logger?
    /// How long a re-open of an address waits for the device to come back.
    public var reconnectWait: Duration = .seconds(5)

    private let opened = OpenedAddresses()

    public init(pollInterval: Duration?, logger: Logger? = nil) {
        self.pollInterval = pollInterval
        self.logger = logger
    }

    /// Opens `address` (a `usb:` address). Throws `SettingError` for a malformed `TUNEUP_USB_IDS` (a usage
    /// error: exit 64 in the CLI, not a connection failure), `TransportError` otherwise.
    public func open(_ address: DeviceAddress) async throws -> any Transport {
        let known = try Self.knownDevices()
        let again = opened.contains(address.description)
        let options = USBHIDTransport.Options(pollInterval: pollInterval, wait: again ? reconnectWait : .zero, knownDevices: known)
        let transport = try await USBHIDTransport.open(address, options: options, logger: logger)
        opened.insert(address.description)
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

    /// The addresses opened so far (shared by copies of the bridge).
    private final class OpenedAddresses: Sendable {
        private let addresses = Mutex<Set<String>>([])
        func contains(_ address: String) -> Bool { addresses.withLock { $0.contains(address) } }
        func insert(_ address: String) { _ = addresses.withLock { $0.insert(address) } }
    }
}
