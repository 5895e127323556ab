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
struct USBBridge: Sendable {
    /// Fixed reply-poll interval (nil: adaptive).
    var pollInterval: Duration?
    /// Passed to the transport (open/close at debug, every packet at trace).
    var logger: Logger?
    /// How long a re-open of an address waits for the device to come back.
    var reconnectWait: Duration = .seconds(5)

    private let opened = OpenedAddresses()

    init(pollInterval: Duration?, logger: Logger? = nil) {
        self.pollInterval = pollInterval
        self.logger = logger
    }

    func open(_ address: DeviceAddress) async throws -> any Transport {
        let known: USBKnownDevices
        do {
            known = try USBKnownDevices.fromEnvironment(ProcessInfo.processInfo.environment)
        } catch {
            // A setting, not a connection problem: exit 64, as for `tuneup devices`.
            throw CommandFailure(message: error.message, code: Exit.usage)
        }
        let again = opened.contains(address.description)
        let options = USBHIDTransport.Options(pollInterval: pollInterval, wait: again ? reconnectWait : .zero, knownDevices: known)
        let transport = try await USBHIDTransport.open(address, options: options, logger: logger)
        opened.insert(address.description)
        return transport
    }

    /// The addresses opened so far (shared by copies of the bridge).
    private final class OpenedAddresses: Sendable {
        private let addresses = Mutex<Set<String>>([])
        func contains(_ address: String) -> Bool { addresses.withLock { $0.contains(address) } }
        func insert(_ address: String) { _ = addresses.withLock { $0.insert(address) } }
    }
}
