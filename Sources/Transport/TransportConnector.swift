import Logging

/// Opens a `Transport` for a `DeviceAddress` — the one place that knows which back end serves which address kind.
///
/// Contract: `tcp:` → `TCPTransport.connect` (with `connectTimeout`); `serial:` → `SerialTransport.open` (115200
/// baud on real ttys); `sim` → the `simulator` closure, which receives the state path (or `.unsupported` when there is
/// none); `usb:` and `bt:` → `.unsupported` until those back ends exist. When `linkConditions` is set, the opened
/// transport is wrapped in a `ConditionedTransport`. Errors are `TransportError`s with one-line messages.
public struct TransportConnector: Sendable {
    /// Limit for resolving and connecting TCP addresses.
    public var connectTimeout: Duration
    /// Starts the built-in simulator for `sim[:STATEFILE]` addresses and returns a transport connected to it.
    public var simulator: (@Sendable (String?) async throws -> any Transport)?
    /// Passed to the back ends; chunks are traced in hex at `.trace`.
    public var logger: Logger?
    /// When set, every opened transport is wrapped in a `ConditionedTransport` with these conditions.
    public var linkConditions: LinkConditions?

    /// Creates a connector. `simulator` serves `sim` addresses; without it they fail with `.unsupported`.
    public init(connectTimeout: Duration = .seconds(5), simulator: (@Sendable (String?) async throws -> any Transport)? = nil) {
        self.connectTimeout = connectTimeout
        self.simulator = simulator
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
            throw TransportError(.unsupported, "USB transport is not available in this build yet (\(address))")
        case .bluetooth:
            throw TransportError(.unsupported, "Bluetooth transport is not available in this build yet (\(address))")
        }
    }
}
