import Logging

/// Opens a `Transport` for a `DeviceAddress`: the one place that knows which back end serves which scheme.
///
/// Contract: every scheme has at most one opener, registered under the scheme's name (`DeviceAddress.scheme`):
/// `tcp` → `TCPTransport.connect` (with `connectTimeout`) and `serial` → `SerialTransport.open` (115200 baud on real
/// ttys) are registered by every connector; `sim:headset` (the built-in simulator, given the state path), `usb`,
/// `bt` and any scheme registered by another module (`AddressScheme`) are plugged in by the caller, since their back
/// ends live in other targets (some link C libraries). An address whose scheme has no opener fails with
/// `.unsupported`. When `linkConditions` is set, the opened transport is wrapped in a `ConditionedTransport`.
/// Errors are `TransportError`s with one-line messages.
public struct TransportConnector: Sendable {
    /// What an opener gets besides the address: the connector's settings.
    public struct Context: Sendable {
        /// Limit for resolving and connecting network addresses.
        public var connectTimeout: Duration
        /// Passed to the back ends; chunks are traced in hex at `.trace`.
        public var logger: Logger?
    }

    /// Opens one address of the scheme it is registered for.
    public typealias Opener = @Sendable (DeviceAddress, Context) async throws -> any Transport

    /// Limit for resolving and connecting TCP addresses.
    public var connectTimeout: Duration
    /// Passed to the back ends; chunks are traced in hex at `.trace`.
    public var logger: Logger?
    /// When set, every opened transport is wrapped in a `ConditionedTransport` with these conditions.
    public var linkConditions: LinkConditions?
    private var openers: [String: Opener]

    /// Creates a connector that opens `tcp:` and `serial:`, plus `sim` (`simulator`, given the state path), `usb:`
    /// (both forms) and `bt:` when their openers are given. Addresses without an opener fail with `.unsupported`.
    public init(connectTimeout: Duration = .seconds(5), simulator: (@Sendable (String?) async throws -> any Transport)? = nil,
                usb: (@Sendable (DeviceAddress) async throws -> any Transport)? = nil,
                bluetooth: (@Sendable (DeviceAddress) async throws -> any Transport)? = nil) {
        self.connectTimeout = connectTimeout
        openers = [
            "tcp": { address, context in
                guard case let .tcp(host, port) = address else { throw Self.mismatch(address, "tcp") }
                return try await TCPTransport.connect(host: host, port: port, timeout: context.connectTimeout, logger: context.logger)
            },
            "serial": { address, context in
                guard case let .serial(path) = address else { throw Self.mismatch(address, "serial") }
                return try await SerialTransport.open(path: path, logger: context.logger)
            },
        ]
        if let simulator {
            register("sim:headset") { address, _ in
                guard case let .simulator(statePath) = address else { throw Self.mismatch(address, "sim:headset") }
                return try await simulator(statePath)
            }
        }
        if let usb { register("usb") { address, _ in try await usb(address) } }
        if let bluetooth { register("bt") { address, _ in try await bluetooth(address) } }
    }

    /// Opens addresses of the scheme named `scheme` with `opener` from now on (replacing any opener it had).
    public mutating func register(_ scheme: String, opener: @escaping Opener) {
        openers[scheme] = opener
    }

    /// This connector with `opener` registered for `scheme`.
    public func registering(_ scheme: String, opener: @escaping Opener) -> TransportConnector {
        var copy = self
        copy.register(scheme, opener: opener)
        return copy
    }

    /// Whether addresses of `scheme` can be opened.
    public func canOpen(_ scheme: String) -> Bool { openers[scheme] != nil }

    /// Opens `address`. Throws `TransportError` (see the type's contract) or `CancellationError`.
    public func open(_ address: DeviceAddress) async throws -> any Transport {
        guard let opener = openers[address.scheme] else { throw Self.unsupported(address) }
        let transport = try await opener(address, Context(connectTimeout: connectTimeout, logger: logger))
        guard let linkConditions else { return transport }
        return ConditionedTransport(wrapping: transport, conditions: linkConditions, logger: logger)
    }

    private static func unsupported(_ address: DeviceAddress) -> TransportError {
        switch address {
        case .simulator: return TransportError(.unsupported, "the built-in simulator is not available here")
        case .usb, .usbPort: return TransportError(.unsupported, "USB is not available here (\(address))")
        case .bluetooth: return TransportError(.unsupported, "Bluetooth is not available here (\(address))")
        default: return TransportError(.unsupported, "'\(address.scheme)' addresses cannot be opened here (\(address))")
        }
    }

    /// An address handed to the opener of another scheme (a registration mistake, not user input).
    static func mismatch(_ address: DeviceAddress, _ scheme: String) -> TransportError {
        TransportError(.invalidAddress, "\(address) is not a \(scheme) address")
    }
}
