import Simulator
import Synchronization
import Transport

/// The server of simulated wearables: `SimulatedDeviceServer` (TCP, pty, in process, ...) serving `SimulatedWearable`s.
public typealias WearableSimulatorServer = SimulatedDeviceServer<SimulatedWearable>

/// An in-process simulated wearable: the device, its server and a listener whose `connect()` makes a new link to it
/// (each `open()` of a session a new connection, as BLE does).
public struct InProcessWearable: Sendable {
    public let device: SimulatedWearable
    public let server: WearableSimulatorServer
    public let listener: InProcessListener

    /// Starts serving `device` in process.
    public init(device: SimulatedWearable) throws {
        self.device = device
        self.server = try WearableSimulatorServer(devices: [device])
        self.listener = InProcessListener(name: "wearable")
        try server.attach(listener, toDevice: 0)
    }

    /// A new link to the device.
    public func connect() throws -> any Transport { try listener.connect() }
}

/// The `sim:wearable[:SEED]` devices of this process: one per seed, made on first use, kept until the process ends
/// (so reopening finds the same device, with everything disabled again).
public enum WearableSimulatorBridge {
    private static let devices = Mutex<[UInt64: InProcessWearable]>([:])

    /// The scheme's name.
    public static let scheme = "sim:wearable"

    /// The address scheme (for `AddressSchemes`): `sim:wearable[:SEED]`.
    public static let addressScheme = AddressScheme.seeded(
        scheme, device: "simulated wearable", summary: "a simulated Bose Wearable, in process; SEED: its head motion")

    /// Opens a link to the in-process wearable of `address`'s seed.
    public static func open(_ address: DeviceAddress) throws -> any Transport {
        let seed = try AddressScheme.seed(of: address, scheme: scheme, device: "simulated wearable")
        let wearable = try devices.withLock { d throws -> InProcessWearable in
            if let existing = d[seed] { return existing }
            let made = try InProcessWearable(device: SimulatedWearable(
                profile: WearableProfile(motion: HeadMotion(seed: seed)), name: "wearable \(seed)"))
            d[seed] = made
            return made
        }
        return try wearable.connect()
    }
}
