import BluetoothTransport
import Glibc
import Logging
import Transport

/// Opens `bt:` addresses with the Bluetooth back end: an RFCOMM connection (SPP framing above it), to the channel in
/// the address or, without one, to the device's SPP channel found through SDP.
///
/// The local adapter is `TUNEUP_BT_ADAPTER` (`hciN` or the adapter's address) when set and not empty; otherwise the
/// kernel picks the route. Connecting (SDP included) is limited to `connectTimeout`.
public enum BluetoothBridge {
    /// Limit for the SDP lookup plus the connection: paging a device that is asleep or far away takes seconds.
    public static let connectTimeout: Duration = .seconds(10)

    /// The environment variable naming the local adapter.
    public static let adapterVariable = "TUNEUP_BT_ADAPTER"

    /// Opens `address` (which must be a `bt:` address). Throws `TransportError` with a one-line message.
    public static func open(_ address: DeviceAddress, logger: Logger? = nil) async throws -> any Transport {
        guard case let .bluetooth(device, channel) = address else {
            throw TransportError(.invalidAddress, "\(address) is not a Bluetooth address (expected bt:AA:BB:CC:DD:EE:FF[:CHANNEL])")
        }
        let adapter = adapterFromEnvironment()
        do {
            return try await RFCOMMTransport.connect(
                to: device, channel: channel, adapter: adapter, timeout: connectTimeout, logger: logger)
        } catch let error as TransportError where error.code == .invalidAddress && adapter != nil {
            // The only address-like input besides the address itself is the environment: say where it came from.
            throw TransportError(.invalidAddress, "\(adapterVariable)=\(adapter ?? ""): \(error.message)")
        }
    }

    /// `TUNEUP_BT_ADAPTER`, or nil when unset or empty.
    public static func adapterFromEnvironment() -> String? {
        guard let raw = getenv(adapterVariable) else { return nil }
        let value = String(cString: raw)
        return value.isEmpty ? nil : value
    }
}
