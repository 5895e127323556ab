import LightX

/// The layout of the simulated headset's 2 MiB NOR flash (design note, "Flash map"). Offsets are absolute flash
/// addresses; the Boot commands address the application and resource regions by offset within the region.
///
/// | range | what |
/// |---|---|
/// | 0x000000-0x01FFFF | bootloader (write-protected) |
/// | 0x020000-0x02FFFF | boot data: the commit-record log (`CommitLog`) |
/// | 0x030000-0x031FFF | factory data: identity, calibration, lock of a production-line unit (`FactoryRecord`) |
/// | 0x032000-0x03FFFF | reserved (settings NVM; the simulator keeps settings in the JSON state file) |
/// | 0x040000-0x0BFFFF | application region, 512 KiB |
/// | 0x0C0000-0x1FFFFF | resource region, 1280 KiB |
public enum FlashMap {
    /// The whole device: 2 MiB.
    public static let size = 2 * 1024 * 1024
    /// The erase unit.
    public static let sectorSize = FlashRegion.sectorSize
    /// The program unit: one program operation writes within one 256-byte page.
    public static let pageSize = FlashRegion.blockSize
    /// The bootloader's own code; erase and program are refused by the flash's write protection.
    public static let bootloader = 0x00_0000..<0x02_0000
    /// The commit-record log.
    public static let bootData = 0x02_0000..<0x03_0000
    /// The factory-data ring (two sectors), inside the settings area.
    public static let factoryData = 0x03_0000..<0x03_2000
    /// Reserved for settings (its first two sectors hold the factory data).
    public static let settings = 0x03_0000..<0x04_0000
    /// The application image.
    public static let application = 0x04_0000..<0x0C_0000
    /// The resource image.
    public static let resource = 0x0C_0000..<0x20_0000

    /// The absolute range of an updatable region.
    public static func range(of region: FlashRegion) -> Range<Int> {
        region == .application ? application : resource
    }

    /// The number of sectors of an updatable region (128 for the application, 320 for the resource).
    public static func sectorCount(of region: FlashRegion) -> Int { range(of: region).count / sectorSize }
}

/// How long the simulated hardware takes, before `timeScale` is applied (see `scaled(by:)`).
///
/// The defaults are close to real serial NOR parts and MCUs: 45 ms per 4 KiB sector erase, 0.7 ms per 256-byte
/// page program, reads (CRC, read-back) at 20 MB/s, 1.5 s from a reset until the firmware answers (NotReady
/// before), and 300 ms without power after a power cut before the device powers up again.
public struct DeviceTiming: Sendable, Hashable {
    /// One sector erase.
    public var sectorErase: Duration
    /// One page program (up to 256 bytes).
    public var pageProgram: Duration
    /// Flash read throughput in bytes per second (CRC checks and read-back); infinity or ≤ 0 means instant.
    public var readBytesPerSecond: Double
    /// From a reset (jump or power-on) until the firmware stops answering NotReady.
    public var readyDelay: Duration
    /// How long the device stays off after a power cut before it powers up again.
    public var powerUpDelay: Duration
    /// One ANC calibration measurement (0x71) of a production-line unit.
    public var ancCalibration: Duration
    /// A microphone-sensitivity measurement (0x6B) of a production-line unit; a battery reading takes half of it,
    /// the ANC attenuation one and a half.
    public var factoryMeasurement: Duration

    /// Creates a timing model; the defaults are `standard`'s.
    public init(sectorErase: Duration = .milliseconds(45), pageProgram: Duration = .microseconds(700),
                readBytesPerSecond: Double = 20_000_000, readyDelay: Duration = .milliseconds(1500),
                powerUpDelay: Duration = .milliseconds(300), ancCalibration: Duration = .milliseconds(800),
                factoryMeasurement: Duration = .milliseconds(100)) {
        self.sectorErase = sectorErase
        self.pageProgram = pageProgram
        self.readBytesPerSecond = readBytesPerSecond
        self.readyDelay = readyDelay
        self.powerUpDelay = powerUpDelay
        self.ancCalibration = ancCalibration
        self.factoryMeasurement = factoryMeasurement
    }

    /// The default model (see the type's description).
    public static let standard = DeviceTiming()
    /// Everything instant: what `scaled(by: 0)` gives.
    public static let instant = DeviceTiming(sectorErase: .zero, pageProgram: .zero, readBytesPerSecond: .infinity,
                                             readyDelay: .zero, powerUpDelay: .zero, ancCalibration: .zero,
                                             factoryMeasurement: .zero)

    /// Every duration multiplied by `factor` (reads `factor` times slower). A factor of 0, below 0 or NaN gives
    /// `instant`; an infinite factor is treated as 1.
    public func scaled(by factor: Double) -> DeviceTiming {
        if factor.isNaN || factor <= 0 { return .instant }
        if factor.isInfinite { return self }
        return DeviceTiming(
            sectorErase: Self.scale(sectorErase, factor), pageProgram: Self.scale(pageProgram, factor),
            readBytesPerSecond: readBytesPerSecond / factor, readyDelay: Self.scale(readyDelay, factor),
            powerUpDelay: Self.scale(powerUpDelay, factor), ancCalibration: Self.scale(ancCalibration, factor),
            factoryMeasurement: Self.scale(factoryMeasurement, factor))
    }

    /// The time to read `count` bytes.
    public func readTime(bytes count: Int) -> Duration {
        guard count > 0, readBytesPerSecond.isFinite, readBytesPerSecond > 0 else { return .zero }
        let ns = Double(count) / readBytesPerSecond * 1e9
        return ns >= 9.2e18 ? .seconds(Int64.max / 1_000_000_000) : .nanoseconds(Int64(ns.rounded()))
    }

    /// `d × factor`, saturating, never negative.
    static func scale(_ d: Duration, _ factor: Double) -> Duration {
        let ns = Double(ApplicationFirmware.nanoseconds(d)) * factor
        guard ns.isFinite, ns > 0 else { return .zero }
        return ns >= 9.2e18 ? .nanoseconds(Int64.max) : .nanoseconds(Int64(ns.rounded()))
    }
}
