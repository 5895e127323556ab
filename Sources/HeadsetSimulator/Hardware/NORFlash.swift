import LightX
import Support
import Transport

/// Counters of a `NORFlash` since the simulator started (they survive power cycles, not a restart of the process).
///
/// Times are the device-busy time the operations took with the flash's timing model — already multiplied by the
/// simulator's `timeScale`, so they are what the device actually spent. A benchmark's "device busy" bound is
/// `eraseTime + programTime`.
public struct FlashStatistics: Sendable, Hashable {
    /// Erase and program operations attempted (refusals by write protection or range checks are not operations).
    /// Fault injection numbers operations 1, 2, ... in this count.
    public var operations = 0
    /// Sector erases attempted.
    public var erases = 0
    /// Page programs attempted.
    public var programs = 0
    /// Bytes handed to page programs.
    public var bytesProgrammed = 0
    /// Read passes (read commands, read-back checks, CRC computations, power-on checks).
    public var reads = 0
    /// Bytes read by those passes.
    public var bytesRead = 0
    /// Busy time of all erases.
    public var eraseTime: Duration = .zero
    /// Busy time of all page programs.
    public var programTime: Duration = .zero
    /// Busy time of all reads.
    public var readTime: Duration = .zero
    /// Operations torn by an injected power cut.
    public var powerCuts = 0
    /// Operations failed by fault injection.
    public var injectedFailures = 0

    /// Creates zeroed counters.
    public init() {}

    /// All busy time: erases, programs and reads.
    public var busyTime: Duration { eraseTime + programTime + readTime }
}

/// Flash faults to inject, by operation number (1 = the first erase or program since the simulator started).
public struct FlashFaults: Sendable, Hashable {
    /// Operations during which the power is cut: the operation is torn (an erase leaves each byte either as it
    /// was or 0xFF, at random; a program writes only a random proper prefix of its data).
    public var powerCutAt: Set<Int>
    /// Operations that fail: the flash is left unchanged and the command answers Fail.
    public var failAt: Set<Int>
    /// Seed of the generator that decides how operations are torn.
    public var seed: UInt64

    /// Creates a fault set; the default injects nothing.
    public init(powerCutAt: Set<Int> = [], failAt: Set<Int> = [], seed: UInt64 = 0) {
        self.powerCutAt = powerCutAt
        self.failAt = failAt
        self.seed = seed
    }

    /// No faults.
    public static let none = FlashFaults()
}

/// The outcome of one erase or program operation.
public struct FlashOperation: Sendable, Hashable {
    /// How an operation ended.
    public enum Status: Sendable, Hashable {
        /// Done.
        case ok
        /// The address range is write-protected (the bootloader): nothing happened, no time spent.
        case protected
        /// The address is outside the flash, or a program crosses a page boundary: nothing happened.
        case outOfRange
        /// Fault injection made it fail: the flash is unchanged.
        case failed
        /// Fault injection cut the power during it: the operation is torn and the device loses power.
        case powerCut
    }

    /// How it ended.
    public var status: Status
    /// The device-busy time it took.
    public var busy: Duration
    /// The flash bytes it may have changed (nil when none), for persistence.
    public var touched: Range<Int>?
}

/// A 2 MiB serial NOR flash: 4 KiB sectors erase to 0xFF, programming only clears bits (new = old & data) within one
/// 256-byte page, reads are free of side effects. A value type: no I/O, no clock; each operation reports the
/// device-busy time its timing model gives, and the owner sleeps for it.
///
/// Operations are counted (`statistics.operations`) and fault injection (`faults`) can tear or fail the N-th one.
/// The bootloader range is write-protected: erase and program there are refused (`.protected`) and not counted.
public struct NORFlash: Sendable {
    /// The contents, `FlashMap.size` bytes.
    public private(set) var bytes: [UInt8]
    /// The timing model (already scaled).
    public var timing: DeviceTiming
    /// The write-protected range.
    public let protectedRange: Range<Int>
    /// Counters since the simulator started.
    public private(set) var statistics = FlashStatistics()
    /// Faults to inject.
    public var faults: FlashFaults {
        didSet { tearing = SeededRandom(seed: faults.seed) }
    }

    private var tearing: SeededRandom

    /// A flash holding `contents` (padded with 0xFF or cut to `FlashMap.size`), or fully erased.
    public init(contents: [UInt8]? = nil, timing: DeviceTiming = .standard, protectedRange: Range<Int> = FlashMap.bootloader,
                faults: FlashFaults = .none) {
        if let contents, contents.count == FlashMap.size {
            self.bytes = contents
        } else {
            var bytes = [UInt8](repeating: 0xFF, count: FlashMap.size)
            if let contents {
                let n = Swift.min(contents.count, FlashMap.size)
                bytes.replaceSubrange(0..<n, with: contents[0..<n])
            }
            self.bytes = bytes
        }
        self.timing = timing
        self.protectedRange = protectedRange
        self.faults = faults
        self.tearing = SeededRandom(seed: faults.seed)
    }

    /// The bytes in `range` without timing or counting (the simulator's own inspection; clamped to the flash).
    public subscript(range: Range<Int>) -> ArraySlice<UInt8> {
        let r = range.clamped(to: 0..<bytes.count)
        return bytes[r]
    }

    /// The byte at `address` without timing or counting (0xFF outside the flash).
    public subscript(address: Int) -> UInt8 {
        bytes.indices.contains(address) ? bytes[address] : 0xFF
    }

    /// Erases the sector containing `address` (any address inside it): every byte becomes 0xFF.
    public mutating func eraseSector(containing address: Int) -> FlashOperation {
        guard (0..<bytes.count).contains(address) else { return FlashOperation(status: .outOfRange, busy: .zero, touched: nil) }
        let start = address - address % FlashMap.sectorSize
        let sector = start..<(start + FlashMap.sectorSize)
        guard !sector.overlaps(protectedRange) else { return FlashOperation(status: .protected, busy: .zero, touched: nil) }
        let busy = timing.sectorErase
        statistics.erases += 1
        statistics.eraseTime += busy
        switch nextOperation() {
        case .failed:
            return FlashOperation(status: .failed, busy: busy, touched: nil)
        case .powerCut:
            for k in sector where tearing.next() & 1 == 0 { bytes[k] = 0xFF }
            return FlashOperation(status: .powerCut, busy: busy, touched: sector)
        default:
            bytes.withUnsafeMutableBufferPointer { b in
                for k in sector { b[k] = 0xFF }
            }
            return FlashOperation(status: .ok, busy: busy, touched: sector)
        }
    }

    /// Programs `data` (1...256 bytes) at `address`; the range must lie within one 256-byte page. Each byte becomes
    /// `old & new`, so programming over unerased bytes does not give `data` back (the caller reads back to check).
    public mutating func program<C: Collection<UInt8>>(at address: Int, _ data: C) -> FlashOperation {
        let count = data.count
        guard count > 0, address >= 0, address <= bytes.count - count,
              address / FlashMap.pageSize == (address + count - 1) / FlashMap.pageSize else {
            return FlashOperation(status: .outOfRange, busy: .zero, touched: nil)
        }
        let range = address..<(address + count)
        guard !range.overlaps(protectedRange) else { return FlashOperation(status: .protected, busy: .zero, touched: nil) }
        let busy = timing.pageProgram
        statistics.programs += 1
        statistics.bytesProgrammed += count
        statistics.programTime += busy
        let status = nextOperation()
        if status == .failed { return FlashOperation(status: .failed, busy: busy, touched: nil) }
        // A torn program writes a proper prefix (possibly nothing).
        let written = status == .powerCut ? Int(tearing.next() % UInt64(count)) : count
        var k = address
        for byte in data.prefix(written) {
            bytes[k] &= byte
            k += 1
        }
        return FlashOperation(status: status, busy: busy, touched: range)
    }

    /// Reads `count` bytes at `address` (clamped to the flash) and the time it takes.
    public mutating func read(at address: Int, count: Int) -> (bytes: [UInt8], busy: Duration) {
        let range = (address..<(address + max(0, count))).clamped(to: 0..<bytes.count)
        let busy = countRead(range.count)
        return (Array(bytes[range]), busy)
    }

    /// CRC-32/JAMCRC of `range` (clamped to the flash), as the bootloader computes it, and the time the read takes.
    public mutating func crc(of range: Range<Int>) -> (crc: UInt32, busy: Duration) {
        let r = range.clamped(to: 0..<bytes.count)
        let busy = countRead(r.count)
        let crc = bytes.withUnsafeBytes { raw in
            var c = CRC32JAMCRC()
            c.update(UnsafeRawBufferPointer(rebasing: raw[r]))
            return c.value
        }
        return (crc, busy)
    }

    // MARK: - Internals

    private mutating func countRead(_ n: Int) -> Duration {
        let busy = timing.readTime(bytes: n)
        statistics.reads += 1
        statistics.bytesRead += n
        statistics.readTime += busy
        return busy
    }

    /// Numbers the next operation and returns what fault injection decides for it (.ok, .failed or .powerCut).
    private mutating func nextOperation() -> FlashOperation.Status {
        statistics.operations += 1
        let n = statistics.operations
        if faults.powerCutAt.contains(n) {
            statistics.powerCuts += 1
            return .powerCut
        }
        if faults.failAt.contains(n) {
            statistics.injectedFailures += 1
            return .failed
        }
        return .ok
    }
}
