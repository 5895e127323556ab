import Firmware
import Logging

/// Settings of simulated headsets, shared by every headset a server creates.
public struct SimulatorOptions: Sendable {
    /// How the devices behave on their links.
    public var profile: BehaviourProfile
    /// Battery drain period (1 % each); zero disables the drain.
    public var drainInterval: Duration
    /// How long to wait for another owner of the state file.
    public var lockTimeout: Duration
    /// Whether starting is a power cycle (EQ working gains revert to the persisted ones, the default preset becomes
    /// current). True for servers; `inProcess` ignores it: its device stays on between CLI commands.
    public var powerOn: Bool
    /// Where diagnostics go (nil: nowhere).
    public var logger: Logger?
    /// Multiplies every modelled duration — flash erase/program/read, the readiness delay after a reset, the time
    /// off after a power cut (`timing`). 1 is real time, 0 makes everything instant (tests). Default 1.
    public var timeScale: Double
    /// The timing model before `timeScale` (default `DeviceTiming.standard`: 45 ms erase, 0.7 ms page program,
    /// 20 MB/s reads, 1.5 s readiness delay, 0.3 s off after a power cut).
    public var timing: DeviceTiming
    /// Faults to inject (the CLI's `--faults`, see `FaultPlan`). Flash-operation numbers count per device.
    public var faults: FaultPlan
    /// Secure boot: when set, the bootloader boots and commits only MCUboot images with a valid Ed25519 signature by
    /// this key, and refuses to commit a version below the committed one. Nil (default): CRC checks only.
    public var secureBootKey: VerificationKey?
    /// Flow control: how many received requests may wait unprocessed (Q, reported by capabilities 0x3B; default 32).
    public var queueDepth: Int
    /// Units fresh from assembly (`--blank`): each device k is unit k of this line — a unique chip uid, no serial
    /// number, the default Bluetooth name, no calibration, its own microphone spread — and answers the factory
    /// commands (docs/protocol.md §7). Nil (default): the classic headset, which answers none of them.
    public var production: ProductionLine?

    /// Creates options; the defaults are a normal device draining 1 % per minute, a 10 s lock wait, real-time flash
    /// timing, no faults, no secure boot and a queue depth of 32.
    public init(profile: BehaviourProfile = .normal, drainInterval: Duration = ApplicationFirmware.defaultDrainInterval,
                lockTimeout: Duration = StateStore.defaultLockTimeout, powerOn: Bool = true, logger: Logger? = nil,
                timeScale: Double = 1, timing: DeviceTiming = .standard, faults: FaultPlan = .none,
                secureBootKey: VerificationKey? = nil, queueDepth: Int = SimulatorOptions.defaultQueueDepth) {
        self.profile = profile
        self.drainInterval = drainInterval
        self.lockTimeout = lockTimeout
        self.powerOn = powerOn
        self.logger = logger
        self.timeScale = timeScale
        self.timing = timing
        self.faults = faults
        self.secureBootKey = secureBootKey
        self.queueDepth = queueDepth
        self.production = nil
    }

    /// The default flow-control depth Q.
    public static let defaultQueueDepth = 32
}
