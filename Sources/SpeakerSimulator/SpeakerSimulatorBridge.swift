import Simulator
import Speaker
import Synchronization
import Transport

/// An in-process simulated speaker: the device, its server and a listener whose `connect()` makes a new control link
/// to it; its audio socket is bound on the loopback interface (`audioHost`), so a controller in the same process can
/// stream to it.
public struct InProcessSpeaker: Sendable {
    public let device: SimulatedSpeaker
    public let server: SimulatedDeviceServer<SimulatedSpeaker>
    public let listener: InProcessListener

    /// Where the speaker's audio socket listens.
    public static let audioHost = "127.0.0.1"

    /// Starts serving `device` in process, with its audio on a free UDP port of `audioHost`.
    /// - Throws: `TransportError` (the audio socket cannot be bound).
    public init(device: SimulatedSpeaker) throws {
        self.device = device
        self.server = try SimulatedDeviceServer(devices: [device])
        self.listener = InProcessListener(name: "speaker")
        try server.attach(listener, toDevice: 0)
        device.startAudio(on: try UDPSocket.bind(host: Self.audioHost, port: 0))
    }

    /// A new control link to the device.
    public func connect() throws -> any Transport { try listener.connect() }
}

/// The `sim:speaker[:SEED]` devices of this process: one per seed (its identity: id, name, MAC), made on first use and
/// kept until the process ends, so reopening finds the same speaker with the settings it was given. Nothing is
/// persisted: each process starts with the speaker's defaults (`tuneup sim speaker --state FILE` keeps settings).
public enum SpeakerSimulatorBridge {
    private static let devices = Mutex<[UInt64: InProcessSpeaker]>([:])

    /// The scheme's name.
    public static let scheme = "sim:speaker"

    /// The address scheme (for `AddressSchemes`): `sim:speaker[:SEED]`.
    public static let addressScheme = AddressScheme.seeded(
        scheme, device: "simulated speaker", summary: "a simulated HKWirelessHD speaker, in process; SEED: its identity")

    /// Opens a control link to the in-process speaker of `address`'s seed.
    /// - Throws: `TransportError` (not a `sim:speaker` address; the speaker's audio socket cannot be bound).
    public static func open(_ address: DeviceAddress) throws -> any Transport {
        let seed = try AddressScheme.seed(of: address, scheme: scheme, device: "simulated speaker")
        let speaker = try devices.withLock { d throws -> InProcessSpeaker in
            if let existing = d[seed] { return existing }
            let made = try InProcessSpeaker(device: SimulatedSpeaker(.init(
                identity: .simulated(index: 0, seed: seed), ipAddress: InProcessSpeaker.audioHost, audioPort: 0, jitterSeed: seed)))
            d[seed] = made
            return made
        }
        return try speaker.connect()
    }
}
