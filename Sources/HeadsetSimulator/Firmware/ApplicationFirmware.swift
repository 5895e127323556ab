import LightX
import Support
import Transport

/// Which image the simulated device's MCU is running (BootImageType: 0 bootloader, 1 application).
public enum RunningImage: String, Sendable, Hashable, Codable {
    /// The application firmware: answers the App, Config and the app-mode subset of the Boot commands.
    case application
    /// The bootloader: answers the Boot commands (flash update) and the Config strings.
    case bootloader
}

/// The device-side request handler of the simulated headset's application firmware.
///
/// Pure: no I/O and no clock reads (time comes in through `advanceTime(by:)`), and its only randomness (the
/// authentication challenge) comes from a `SeededRandom` given at creation. Every request gets exactly one reply,
/// built with `Packet.reply(to:status:buffer:swapModules: true)` — same opcode and param0, type Result. Read replies
/// carry the value, write acknowledgements an empty buffer. Rejected requests never change the state.
///
/// Status codes: destination other than 0x40 → NotFound; opcode other than Read/Write, an undefined command, the wrong
/// direction for a setting, or a command this model lacks (tap, sensor, calibration, flash) → NotSupported; an
/// argument too short to decode → Fail; a value out of range → ExceededLimits.
public struct ApplicationFirmware: Sendable {
    /// The device state. Host writes and device events change it; the owner persists it.
    public internal(set) var state: HeadsetState
    /// The image this firmware is: always `.application` (the device decides what runs; see `SimulatedHeadset`).
    public internal(set) var mode: RunningImage = .application
    /// How long the battery takes to drain by 1 %. Zero or negative disables the drain.
    public var drainInterval: Duration
    /// Whether the host has passed the authentication handshake since the last challenge (0x22).
    public internal(set) var isAuthenticated = false
    /// Whether the host asked the application to shut down (0x7F), as it does before jumping to the bootloader.
    public internal(set) var shutdownRequested = false
    /// Whether an authenticated host asked for the bootloader (0x25, acknowledged Ok): the device then resets into
    /// the bootloader. A standalone firmware only sets the flag.
    public internal(set) var jumpToBootloaderRequested = false
    /// Version files the application reports besides its own (0x040000): bootloader (0x000000) and resource
    /// (0x0C0000), set by the device from flash at boot. Empty for a standalone firmware (NotFound).
    var versionFiles: [UInt32: String] = [:]

    /// The outstanding authentication challenge; consumed by the next 0x24 write, successful or not.
    var challenge: [UInt8]?
    /// Source of authentication challenges.
    var random: SeededRandom
    /// Time accumulated towards the next 1 % battery drain.
    var drainElapsed: Duration = .zero

    /// The default battery drain interval: 1 % per minute.
    public static let defaultDrainInterval: Duration = .seconds(60)

    /// Creates the firmware over `state` (already validated and powered on), with challenges drawn from a
    /// `SeededRandom(seed: randomSeed)`.
    public init(state: HeadsetState = .factory(), randomSeed: UInt64 = 0, drainInterval: Duration = defaultDrainInterval) {
        self.state = state
        self.random = SeededRandom(seed: randomSeed)
        self.drainInterval = drainInterval
    }

    /// Handles one request and returns its reply. The array holds exactly one packet, the reply; host requests never
    /// cause pushes (the host knows what it changed), but the signature leaves room for replies that do.
    public mutating func handle(_ request: Packet) -> [Packet] {
        [Self.reply(to: request, handleInApplication(request))]
    }

    /// The application's dispatch: destination, opcode, then the command group.
    mutating func handleInApplication(_ request: Packet) -> Outcome {
        guard request.header.destination == .application else { return .notFound }
        guard request.opcode == .read || request.opcode == .write else { return .notSupported }
        switch request.command.group {
        case .config: return handleConfig(request)
        case .boot: return handleBoot(request)
        case .app: return handleApp(request)
        case .reserved, .diagnostic, .push: return .notSupported
        }
    }

    /// The reply packet for `request` with `outcome`.
    static func reply(to request: Packet, _ outcome: Outcome) -> Packet {
        let buffer = Array(outcome.buffer.prefix(Packet.maxBufferSize))
        do {
            return try Packet.reply(to: request, status: outcome.status, buffer: buffer, swapModules: true)
        } catch {
            // Unreachable: the only failure is a buffer over 256 bytes, and the buffer was trimmed to 256.
            preconditionFailure("cannot build a reply: \(error)")
        }
    }

    /// A device push carrying `payload`.
    static func push(_ command: Command, _ payload: [UInt8]) -> Packet {
        do {
            return try Packet.push(command, payload: payload)
        } catch {
            // Unreachable: push payloads are 4-byte values.
            preconditionFailure("cannot build a push: \(error)")
        }
    }
}

/// The status and buffer of a reply, before it is wrapped into a packet.
struct Outcome: Sendable, Hashable {
    var status: Status
    var buffer: [UInt8]

    /// Success with `buffer` (empty for write acknowledgements).
    static func ok(_ buffer: [UInt8] = []) -> Outcome { Outcome(status: .ok, buffer: buffer) }
    static let fail = Outcome(status: .fail, buffer: [])
    static let notFound = Outcome(status: .notFound, buffer: [])
    static let notSupported = Outcome(status: .notSupported, buffer: [])
    static let exceededLimits = Outcome(status: .exceededLimits, buffer: [])
    static let notReady = Outcome(status: .notReady, buffer: [])
    /// Fail, because another host's update owns the device (Tuneup extension, `BootRefusalReason.busy`).
    static let busy = Outcome(status: .fail, buffer: BootRefusalReason.busy.encoded)
}
