import Logging

/// Opens a `Transport` for a `DeviceAddress` — the one place that knows which back end serves which address kind.
///
/// Contract: `tcp:` → `TCPTransport.connect` (with `connectTimeout`); `serial:` → `SerialTransport.open` (115200
/// baud on real ttys); `sim` → the `simulator` closure, which receives the state path; `usb:` → the `usb` closure;
/// `bt:` → the `bluetooth` closure. The USB and Bluetooth back ends live in their own targets (they link C
/// libraries), so the caller plugs them in; an address whose opener is missing fails with `.unsupported`. When
/// `linkConditions` is set, the opened transport is wrapped in a `ConditionedTransport`. Errors are
/// `TransportError`s with one-line messages.
public struct TransportConnector: Sendable {
    /// Limit for resolving and connecting TCP addresses.
    public var connectTimeout: Duration
    /// Starts the built-in simulator for `sim[:STATEFILE]` addresses and returns a transport connected to it.
    public var simulator: (@Sendable (String?) async throws -> any Transport)?
    /// Opens `usb:` addresses (both forms).
    public var usb: (@Sendable (DeviceAddress) async throws -> any Transport)?
    /// Opens `bt:` addresses.
    public var bluetooth: (@Sendable (DeviceAddress) async throws -> any Transport)?
    /// Passed to the back ends; chunks are traced in hex at `.trace`.
    public var logger: Logger?
    /// When set, every opened transport is wrapped in a `ConditionedTransport` with these conditions.
    public var linkConditions: LinkConditions?

    /// Creates a connector. Addresses whose opener is nil fail with `.unsupported`.
    public init(connectTimeout: Duration = .seconds(5), simulator: (@Sendable (String?) async throws -> any Transport)? = nil,
                usb: (@Sendable (DeviceAddress) async throws -> any Transport)? = nil,
                bluetooth: (@Sendable (DeviceAddress) async throws -> any Transport)? = nil) {
        self.connectTimeout = connectTimeout
        self.simulator = simulator
        self.usb = usb
        self.bluetooth = bluetooth
    }

    /// Opens `address`. Throws `TransportError` (see the type's contract) or `CancellationError`.
    public func open(_ address: DeviceAddress) async throws -> any Transport {
        let transport = try await openBackEnd(address)
        guard let linkConditions else { return transport }
        return ConditionedTransport(wrapping: transport, conditions: linkConditions, logger: logger)
    }

    private func openBackEnd(_ address: DeviceAddress) async throws -> any Transport {
        switch address {
        case let .tcp(host, port):
            return try await TCPTransport.connect(host: host, port: port, timeout: connectTimeout, logger: logger)
        case let .serial(path):
            return try await SerialTransport.open(path: path, logger: logger)
        case let .simulator(statePath):
            guard let simulator else {
                throw TransportError(.unsupported, "the built-in simulator is not available here")
            }
            return try await simulator(statePath)
        case .usb, .usbPort:
            guard let usb else { throw TransportError(.unsupported, "USB is not available here (\(address))") }
            return try await usb(address)
        case .bluetooth:
            guard let bluetooth else { throw TransportError(.unsupported, "Bluetooth is not available here (\(address))") }
            return try await bluetooth(address)
        }
    }
}
