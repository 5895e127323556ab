import Headset
import LightX

/// What to write: the image padded to whole sectors.
struct TransferPlan: Sendable {
    let region: FlashRegion
    /// The image padded with 0xFF to a whole number of sectors (what the device's CRC covers).
    let padded: [UInt8]
    /// The sectors this transfer erases and writes.
    let sectors: Range<Int>
    /// Per sector of the padded image, the offsets of its blocks that hold data (found once: the machine asks for
    /// them at every event, and scanning 4 KiB each time made an update's planning quadratic in its sectors).
    private let dataBlocks: [[Int]]

    init(region: FlashRegion, image: [UInt8], from firstSector: Int = 0) {
        self.region = region
        let count = FlashRegion.sectorCount(forLength: image.count)
        let padded = image + [UInt8](repeating: 0xFF, count: count * FlashRegion.sectorSize - image.count)
        self.padded = padded
        sectors = min(firstSector, count)..<count
        dataBlocks = (0..<count).map { sector in
            let first = sector * FlashRegion.sectorSize
            return stride(from: first, to: first + FlashRegion.sectorSize, by: FlashRegion.blockSize).filter { offset in
                padded[offset..<(offset + FlashRegion.blockSize)].contains { $0 != 0xFF }
            }
        }
    }

    var sectorCount: Int { padded.count / FlashRegion.sectorSize }

    /// Offsets of the blocks of `sector` that hold data. All-0xFF blocks are what an erase leaves: not written.
    func blocks(in sector: Int) -> [Int] {
        dataBlocks.indices.contains(sector) ? dataBlocks[sector] : []
    }

    /// Bytes this transfer programs.
    var bytesToWrite: Int { sectors.reduce(0) { $0 + blocks(in: $1).count * FlashRegion.blockSize } }

    /// The blocks of `sector` still to write, given what `state` says is on the device.
    func remainingBlocks(in sector: Int, _ state: TransferState) -> [Int] {
        let done = state.written(in: sector)
        return blocks(in: sector).filter { !done.contains($0) }
    }

    /// Whether `state` has every sector of this plan erased and every block written.
    func isComplete(_ state: TransferState) -> Bool {
        sectors.allSatisfy { state.isErased($0) && remainingBlocks(in: $0, state).isEmpty }
    }

    /// CRC-32/JAMCRC of the first `sectors` sectors, as the device computes it for VerifyCRC.
    func crc(ofFirst sectors: Int) -> UInt32 {
        CRC32JAMCRC.checksum(padded[0..<(sectors * FlashRegion.sectorSize)])
    }
}

/// What an update run has put on the device, kept across reconnects: the sectors whose erase the device
/// acknowledged (or that a resume found in place) and, for each, the blocks it acknowledged writing since.
///
/// A sector erased in this run continues with only its blocks not yet acknowledged after a reconnect, rather than
/// being erased again: programming a NOR block with the data it already holds changes nothing, and the final
/// VerifyCRC guards the result. After a mismatch the sectors from the first bad one are forgotten (`forget(from:)`)
/// and redone from their erase.
struct TransferState: Sendable {
    private var sectors: [Int: Set<Int>] = [:]
    /// Blocks recorded as written, over all sectors.
    private(set) var blocksDone = 0
    /// Bytes of every write the device acknowledged in the run (across connections and redos).
    private(set) var bytesAcknowledged = 0
    /// Erases, writes and reads the device acknowledged in the run: grows with every step forward.
    private(set) var acknowledgements = 0
    var statistics = TransferStatistics()

    func isErased(_ sector: Int) -> Bool { sectors[sector] != nil }
    func written(in sector: Int) -> Set<Int> { sectors[sector] ?? [] }
    var sectorsErased: Int { sectors.count }

    /// The device acknowledged erasing `sector`.
    mutating func erased(_ sector: Int) {
        forget(sector)
        sectors[sector] = []
        acknowledgements += 1
    }

    /// The device acknowledged writing the block at `offset`.
    mutating func wrote(_ offset: Int) {
        bytesAcknowledged += FlashRegion.blockSize
        acknowledgements += 1
        let sector = offset / FlashRegion.sectorSize
        if sectors[sector]?.insert(offset).inserted == true { blocksDone += 1 }
    }

    /// The device answered a read.
    mutating func read() { acknowledgements += 1 }

    /// The device holds `range` of `plan` already (its CRC matched).
    mutating func found(_ range: Range<Int>, of plan: TransferPlan) {
        for sector in range where sectors[sector]?.count != plan.blocks(in: sector).count {
            forget(sector)
            let blocks = Set(plan.blocks(in: sector))
            sectors[sector] = blocks
            blocksDone += blocks.count
        }
    }

    /// Nothing is known of `sector` any more: it is redone from its erase.
    mutating func forget(_ sector: Int) {
        if let blocks = sectors.removeValue(forKey: sector) { blocksDone -= blocks.count }
    }

    /// Forgets every sector from `first` on.
    mutating func forget(from first: Int) {
        for sector in sectors.keys where sector >= first { forget(sector) }
    }
}

/// Counters of a transfer, over every connection.
struct TransferStatistics: Sendable, Hashable {
    /// Requests sent again after a loss or a NotReady.
    var resent = 0
    var redoneSectors = 0
    /// The most requests in flight at once.
    var maxWindow = 0
}

/// How many requests may be in flight, and how long to wait for each.
///
/// Adaptive: the window grows by one request per acknowledgement while replies come back within the latency
/// target, shrinks by one when they take longer (the requests are queueing: a slow device or a slowly polled link
/// such as USB at a fixed 50 ms), and halves on every loss or NotReady, within 1...`limit`. Keeping the latency
/// bounded keeps replies well inside the timeout, so a reply that is merely slow is not taken for a lost one: a
/// "lost" erase costs a whole sector's redo. The timeout follows the measured latency (smoothed RTT + 4 × variation,
/// as TCP does), at least one second, at most `maxTimeout`. A fixed window of 1 is the vendor's stop-and-wait.
struct WindowControl: Sendable {
    let adaptive: Bool
    let limit: Int
    private(set) var size: Int
    private var srtt: Double?
    private var rttvar = 0.0
    let minTimeout: Double
    let maxTimeout: Double
    /// Replies slower than this shrink the window.
    let latencyTarget: Double

    init(fixed: Int?, limit: Int, maxTimeout: Duration) {
        self.limit = max(1, limit)
        adaptive = fixed == nil
        size = fixed.map { min(max(1, $0), max(1, limit)) } ?? min(8, max(1, limit))
        self.maxTimeout = max(0.2, maxTimeout.seconds)
        minTimeout = min(1.0, self.maxTimeout)
        latencyTarget = self.maxTimeout / 4
    }

    mutating func acknowledged(after latency: Double) {
        if let s = srtt {
            rttvar = 0.75 * rttvar + 0.25 * abs(s - latency)
            srtt = 0.875 * s + 0.125 * latency
        } else {
            srtt = latency
            rttvar = latency / 2
        }
        guard adaptive else { return }
        if latency > latencyTarget {
            size = max(1, size - 1)
        } else {
            size = min(limit, size + 1)
        }
    }

    mutating func lost() {
        if adaptive { size = max(1, size / 2) }
    }

    var timeout: Duration {
        guard let srtt else { return .milliseconds(Int64(maxTimeout * 1000)) }
        let t = min(maxTimeout, max(minTimeout, srtt + 4 * rttvar))
        return .milliseconds(Int64(t * 1000))
    }
}

/// The decisions of a windowed flash transfer — programming an image (erase and write) or reading a region back —
/// as a value: which operation to issue next, how many may be in flight, what a reply, a refusal or a lost reply
/// means, which sector to redo, and where to resume after a reconnect. No I/O and no clock: the driver
/// (`TransferPipeline`) submits what `next()` returns, reports each outcome with `complete(_:_:)` (latency
/// included), and calls `linkLost()` and `resume(...)` around reconnects.
///
/// Programming: operations go out strictly in plan order (the device executes them in arrival order, so a sector's
/// erase precedes its writes). A write that is lost or answered NotReady is sent again. A lost, refused or NotReady
/// erase, or a write the device could not program, leaves the sector in an unknown state: the whole sector (erase
/// and every block) is redone after what is queued. Replies to operations of a sector since scheduled for a redo
/// are ignored (per-sector generations). Progress (`state`) is kept across reconnects: a sector whose erase was
/// acknowledged continues with its unacknowledged blocks, and sectors the device verifiably holds are skipped.
///
/// Reading back: every block is read once; a lost read is sent again, and `maxLostReads` losses in a row mean the
/// link is dead (the driver reconnects); a resume reads only the blocks not read yet.
struct TransferMachine: Sendable {
    enum Operation: Sendable, Hashable {
        case erase(sector: Int, generation: Int)
        case write(offset: Int, generation: Int)
        case read(offset: Int, count: Int)
    }

    /// What became of an issued operation.
    enum Outcome: Sendable {
        /// Answered Ok after `latency` seconds; `data` is what a read returned.
        case ok(latency: Double, data: ArraySlice<UInt8> = [])
        /// Answered with another status.
        case refused(BootAnswer, latency: Double)
        /// No reply within the timeout.
        case lost
    }

    /// How often one sector may be redone (per connection) before the update gives up.
    static let maxRedos = 4
    /// Reads lost in a row that mean the link is dead.
    static let maxLostReads = 3

    let region: FlashRegion
    /// Programming: the image; nil when reading back.
    let plan: TransferPlan?
    let addressedErase: Bool
    /// Erase everything first, then write (the vendor's order); otherwise erase and write are interleaved sector by
    /// sector so neither the link nor the device waits for the other.
    let eraseFirst: Bool
    private(set) var window: WindowControl
    /// What the device acknowledged, across reconnects.
    private(set) var state = TransferState()
    /// Operations issued and not yet completed.
    private(set) var inFlight = 0
    /// Whether any write was acknowledged in the run (the transfer's phase moves from erase to write).
    private(set) var anyWriteDone = false

    private var generation: [Int]
    private var redos: [Int]
    private var queue = OperationQueue()

    // Reading back.
    private let readStart: Int
    private let readLength: Int
    /// What was read (`readLength` bytes from `readStart`).
    private(set) var readBytes: [UInt8]
    private var blockRead: [Bool]
    private var lostReadsInARow = 0
    /// Bytes from `readStart` read without a gap: safe to skip after a reconnect, and the read's progress.
    private(set) var readPrefix = 0

    /// Programs `plan`.
    init(program plan: TransferPlan, addressedErase: Bool, eraseFirst: Bool, window: WindowControl) {
        region = plan.region
        self.plan = plan
        self.addressedErase = addressedErase
        self.eraseFirst = eraseFirst
        self.window = window
        generation = [Int](repeating: 0, count: plan.sectorCount)
        redos = generation
        readStart = 0
        readLength = 0
        readBytes = []
        blockRead = []
    }

    /// Reads `length` bytes of `region` from `start`.
    init(readBack region: FlashRegion, from start: Int, length: Int, window: WindowControl) {
        self.region = region
        plan = nil
        addressedErase = false
        eraseFirst = false
        self.window = window
        generation = []
        redos = []
        readStart = start
        readLength = max(0, length)
        readBytes = [UInt8](repeating: 0, count: readLength)
        blockRead = [Bool](repeating: false, count: (readLength + FlashRegion.blockSize - 1) / FlashRegion.blockSize)
    }

    // MARK: Resume points

    /// Starts (or restarts, on a new link) issuing: queues what is still to do. When programming, the first
    /// `verifiedPrefix` sectors are known to be on the device (CRC-checked); `afterMismatch` says the final CRC did
    /// not match, so what was remembered from the first bad sector on is forgotten and redone from its erase.
    mutating func resume(verifiedPrefix: Int = 0, afterMismatch: Bool = false) {
        queue = OperationQueue()
        inFlight = 0
        lostReadsInARow = 0
        guard let plan else {
            for (index, done) in blockRead.enumerated() where !done {
                let offset = index * FlashRegion.blockSize
                queue.append(.read(offset: offset, count: min(FlashRegion.blockSize, readLength - offset)))
            }
            return
        }
        if afterMismatch { state.forget(from: verifiedPrefix) }
        state.found(0..<min(verifiedPrefix, plan.sectorCount), of: plan)
        anyWriteDone = state.blocksDone > 0
        redos = [Int](repeating: 0, count: plan.sectorCount)
        if eraseFirst {
            for s in plan.sectors { queue.append(contentsOf: erase(s)) }
            for s in plan.sectors { queue.append(contentsOf: writes(s)) }
        } else {
            for s in plan.sectors { queue.append(contentsOf: erase(s) + writes(s)) }
        }
    }

    /// The link was lost: nothing in flight will be answered, and the next link gets a smaller window.
    mutating func linkLost() {
        window.lost()
        inFlight = 0
        queue = OperationQueue()
    }

    // MARK: Issuing

    /// The next operation to put on the link, or nil when the window is full or nothing is queued. Counts it as in
    /// flight.
    mutating func next() -> Operation? {
        guard inFlight < window.size else { return nil }
        while let op = queue.next() {
            guard isCurrent(op) else { continue }
            inFlight += 1
            state.statistics.maxWindow = max(state.statistics.maxWindow, inFlight)
            return op
        }
        return nil
    }

    /// Nothing in flight and nothing left to issue on this link.
    var isIdle: Bool { inFlight == 0 && queue.isEmpty }

    /// How long to wait for the reply to the next operation.
    var timeout: Duration { window.timeout }

    /// The bootloader request for `op`.
    func request(for op: Operation) -> BootOperation {
        switch op {
        case let .erase(s, _):
            return .erase(region, sector: s, addressed: addressedErase)
        case let .write(offset, _):
            let padded = plan?.padded ?? []
            let end = min(padded.count, offset + FlashRegion.blockSize)
            return .write(region, offset: offset, data: offset < end ? Array(padded[offset..<end]) : [])
        case let .read(offset, count):
            return .read(region, offset: readStart + offset, count: count)
        }
    }

    // MARK: Outcomes

    /// Records what became of `op`. Throws `UpdateError` when the device keeps refusing (`.deviceRefused`) or
    /// another host owns it (`.deviceBusy`), and `HeadsetError(.timeout)` when reads keep getting lost.
    mutating func complete(_ op: Operation, _ outcome: Outcome) throws {
        inFlight = max(0, inFlight - 1)
        if case let .read(offset, count) = op { return try completeRead(offset, count, outcome) }
        let s = sector(of: op)
        switch outcome {
        case let .ok(latency, _):
            window.acknowledged(after: latency)
            guard isCurrent(op) else { return }
            switch op {
            case .erase: state.erased(s)
            case let .write(offset, _):
                state.wrote(offset)
                anyWriteDone = true
            case .read: break
            }
        case let .refused(answer, _) where answer.status == .notReady:
            window.lost()
            state.statistics.resent += 1
            guard isCurrent(op) else { return }
            if case .write = op { queue.prepend(op) } else { try redo(s, because: "erase answered NotReady") }
        case let .refused(answer, _):
            if answer.isBusy { throw UpdateError.busy }
            guard isCurrent(op) else { return }
            if case .erase = op, answer.status == .exceededLimits {
                throw UpdateError(.deviceRefused, "the device refuses to erase sector \(s) of the \(region.rawValue) region (\(answer.status))")
            }
            let what = op.isErase ? "erase" : "write at 0x" + String(op.offset, radix: 16)
            try redo(s, because: "\(what) answered \(answer.status)")
        case .lost:
            window.lost()
            state.statistics.resent += 1
            guard isCurrent(op) else { return }
            if case .write = op { queue.prepend(op) } else { try redo(s, because: "erase not answered") }
        }
    }

    private mutating func completeRead(_ offset: Int, _ count: Int, _ outcome: Outcome) throws {
        let at = "0x" + String(readStart + offset, radix: 16)
        switch outcome {
        case let .ok(latency, data):
            window.acknowledged(after: latency)
            lostReadsInARow = 0
            guard data.count >= count else {
                throw UpdateError(.deviceRefused, "the device sent \(data.count) bytes for a \(count)-byte read at \(at)")
            }
            readBytes.replaceSubrange(offset..<(offset + count), with: data.prefix(count))
            blockRead[offset / FlashRegion.blockSize] = true
            state.read()
            while readPrefix < readLength, blockRead[readPrefix / FlashRegion.blockSize] { readPrefix += FlashRegion.blockSize }
            readPrefix = min(readPrefix, readLength)
        case let .refused(answer, _):
            if answer.isBusy { throw UpdateError.busy }
            throw UpdateError(.deviceRefused, "the device refuses to read the \(region.rawValue) region at \(at) (\(answer.status))")
        case .lost:
            window.lost()
            state.statistics.resent += 1
            lostReadsInARow += 1
            guard lostReadsInARow < Self.maxLostReads else {
                throw HeadsetError(.timeout, "no reply to \(lostReadsInARow) reads in a row (the last at \(at))")
            }
            queue.prepend(.read(offset: offset, count: count))
        }
    }

    // MARK: Totals

    /// Whether everything is done: every sector erased and every block written, or every block read.
    var isComplete: Bool {
        guard let plan else { return !blockRead.contains(false) }
        return plan.isComplete(state)
    }

    /// Bytes the whole transfer programs (or reads).
    var bytesTotal: Int { plan?.bytesToWrite ?? readLength }
    /// Sectors the whole transfer erases.
    var sectorsTotal: Int { plan?.sectors.count ?? 0 }
    /// Bytes on the device (programming: blocks acknowledged or found in place) or read so far.
    var bytesDone: Int { plan == nil ? readPrefix : state.blocksDone * FlashRegion.blockSize }

    /// The work done, 0...1: an erase weighs half a sector's bytes.
    var workFraction: Double {
        guard let plan else { return readLength > 0 ? Double(readPrefix) / Double(readLength) : 1 }
        let eraseWeight = FlashRegion.sectorSize / 2
        let total = Double(plan.sectors.count * eraseWeight + bytesTotal)
        guard total > 0 else { return 1 }
        return Double(state.sectorsErased * eraseWeight + bytesDone) / total
    }

    // MARK: Internals

    private func erase(_ sector: Int) -> [Operation] {
        state.isErased(sector) ? [] : [.erase(sector: sector, generation: generation[sector])]
    }

    private func writes(_ sector: Int) -> [Operation] {
        guard let plan else { return [] }
        return plan.remainingBlocks(in: sector, state).map { .write(offset: $0, generation: generation[sector]) }
    }

    private func sector(of op: Operation) -> Int {
        switch op {
        case let .erase(s, _): return s
        case let .write(o, _), let .read(o, _): return o / FlashRegion.sectorSize
        }
    }

    private func isCurrent(_ op: Operation) -> Bool {
        switch op {
        case let .erase(s, g): return generation[s] == g
        case let .write(o, g): return generation[o / FlashRegion.sectorSize] == g
        case .read: return true
        }
    }

    private mutating func redo(_ s: Int, because why: String) throws {
        redos[s] += 1
        guard redos[s] <= Self.maxRedos else {
            throw UpdateError(.deviceRefused, "sector \(s) of the \(region.rawValue) region keeps failing (\(why))")
        }
        state.statistics.redoneSectors += 1
        generation[s] += 1
        state.forget(s)
        queue.append(contentsOf: erase(s) + writes(s))
    }
}

extension TransferMachine.Operation {
    var isErase: Bool { if case .erase = self { return true } else { return false } }
    var offset: Int {
        switch self {
        case let .erase(s, _): return s * FlashRegion.sectorSize
        case let .write(o, _), let .read(o, _): return o
        }
    }
}

/// A FIFO of operations that also takes urgent ones at the front.
struct OperationQueue: Sendable {
    private var items: [TransferMachine.Operation] = []
    private var head = 0

    var isEmpty: Bool { head >= items.count }

    mutating func append(_ op: TransferMachine.Operation) { items.append(op) }
    mutating func append(contentsOf ops: [TransferMachine.Operation]) { items.append(contentsOf: ops) }

    mutating func prepend(_ op: TransferMachine.Operation) {
        if head > 0 {
            head -= 1
            items[head] = op
        } else {
            items.insert(op, at: 0)
        }
    }

    mutating func next() -> TransferMachine.Operation? {
        guard head < items.count else { return nil }
        defer {
            head += 1
            if head > 4096, head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
        }
        return items[head]
    }
}
