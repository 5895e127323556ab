import Headset
import LightX
import Logging

/// What to write: the image padded to whole sectors, and which sectors of it to (re)write.
struct TransferPlan: Sendable {
    let region: FlashRegion
    /// The image padded with 0xFF to a whole number of sectors (what the device's CRC covers).
    let padded: [UInt8]
    /// The sectors this transfer erases and writes.
    let sectors: Range<Int>

    init(region: FlashRegion, image: [UInt8], from firstSector: Int) {
        self.region = region
        let count = FlashRegion.sectorCount(forLength: image.count)
        padded = image + [UInt8](repeating: 0xFF, count: count * FlashRegion.sectorSize - image.count)
        sectors = min(firstSector, count)..<count
    }

    var sectorCount: Int { padded.count / FlashRegion.sectorSize }

    /// Offsets of the blocks of `sector` that hold data. All-0xFF blocks are what an erase leaves: not written.
    func blocks(in sector: Int) -> [Int] {
        let first = sector * FlashRegion.sectorSize
        return stride(from: first, to: first + FlashRegion.sectorSize, by: FlashRegion.blockSize).filter { offset in
            padded[offset..<(offset + FlashRegion.blockSize)].contains { $0 != 0xFF }
        }
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
    /// Erases and writes the device acknowledged in the run: grows with every step forward.
    private(set) var acknowledgements = 0
    var statistics = TransferPipeline.Statistics()

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

/// Erases and programs a plan's sectors with several requests in flight, skipping what a `TransferState` says the
/// device holds already (a sector erased in this run gets only its blocks not yet acknowledged).
///
/// Requests go on the link strictly in plan order (the device executes them in arrival order, so a sector's
/// erase always precedes its writes); their replies are awaited concurrently. A write that is lost or answered
/// NotReady is sent again. A lost, refused or NotReady erase, or a write the device could not program, leaves the
/// sector in an unknown state: the whole sector (erase and every block) is redone after what is queued. Replies
/// to operations of a sector that has since been scheduled for a redo are ignored (per-sector generations).
struct TransferPipeline {
    let session: LightXSession
    let plan: TransferPlan
    let addressedErase: Bool
    /// Erase everything first, then write (the vendor's order); otherwise erase and write are interleaved
    /// sector by sector so neither the link nor the device waits for the other.
    let eraseFirst: Bool
    let reporter: ProgressReporter
    let logger: Logger
    var window: WindowControl

    /// How often one sector may be redone before the update gives up.
    static let maxRedos = 4

    enum Operation: Sendable, Hashable {
        case erase(sector: Int, generation: Int)
        case write(offset: Int, generation: Int)
    }

    enum Outcome: Sendable {
        case reply(Packet, latency: Double)
        case lost
    }

    struct Completion: Sendable {
        let operation: Operation
        let outcome: Outcome
    }

    struct Statistics: Sendable {
        var resent = 0
        var redoneSectors = 0
        var maxWindow = 0
    }

    /// Runs the transfer, recording every acknowledgement in `state` as it comes (so that it survives a throw).
    /// Throws `HeadsetError` when the link fails (the caller reconnects and resumes) and
    /// `UpdateError(.deviceRefused)` when the device keeps refusing an operation.
    mutating func run(_ state: inout TransferState) async throws {
        var generation = [Int](repeating: 0, count: plan.sectorCount)
        var redos = [Int](repeating: 0, count: plan.sectorCount)
        var queue = OperationQueue()
        var anyWriteDone = state.blocksDone > 0

        func erase(_ sector: Int, _ gen: Int) -> [Operation] {
            state.isErased(sector) ? [] : [.erase(sector: sector, generation: gen)]
        }
        func writes(_ sector: Int, _ gen: Int) -> [Operation] {
            plan.remainingBlocks(in: sector, state).map { .write(offset: $0, generation: gen) }
        }
        if eraseFirst {
            for s in plan.sectors { queue.append(contentsOf: erase(s, 0)) }
            for s in plan.sectors { queue.append(contentsOf: writes(s, 0)) }
        } else {
            for s in plan.sectors { queue.append(contentsOf: erase(s, 0) + writes(s, 0)) }
        }
        // Progress counts the whole image: what the device holds already is done.
        let totalWrite = plan.bytesToWrite
        let eraseWeight = FlashRegion.sectorSize / 2
        let totalWork = Double(plan.sectors.count * eraseWeight + totalWrite)
        reporter.beginTransfer(bytes: totalWrite, sectors: plan.sectors.count, done: state.blocksDone * FlashRegion.blockSize,
                               window: window.size)

        func sector(of op: Operation) -> Int {
            switch op {
            case let .erase(s, _): return s
            case let .write(o, _): return o / FlashRegion.sectorSize
            }
        }
        func current(_ op: Operation) -> Bool {
            switch op {
            case let .erase(s, g): return generation[s] == g
            case let .write(o, g): return generation[o / FlashRegion.sectorSize] == g
            }
        }
        func redo(_ s: Int, because why: String) throws {
            redos[s] += 1
            guard redos[s] <= Self.maxRedos else {
                throw UpdateError(.deviceRefused, "sector \(s) of the \(plan.region.rawValue) region keeps failing (\(why))")
            }
            logger.debug("redoing sector \(s): \(why)")
            state.statistics.redoneSectors += 1
            generation[s] += 1
            state.forget(s)
            queue.append(contentsOf: erase(s, generation[s]) + writes(s, generation[s]))
        }
        func report() {
            let bytes = state.blocksDone * FlashRegion.blockSize
            let work = Double(state.sectorsErased * eraseWeight + bytes)
            reporter.transfer(phase: anyWriteDone ? .write : .erase, bytesWritten: bytes,
                              sectorsErased: state.sectorsErased, workFraction: totalWork > 0 ? work / totalWork : 1,
                              window: window.size)
        }

        let session = self.session
        try await withThrowingTaskGroup(of: Completion.self) { group in
            var inFlight = 0
            while true {
                while inFlight < window.size, let op = queue.next() {
                    guard current(op) else { continue }
                    let ticket = try await session.submit(try packet(for: op), timeout: window.timeout)
                    inFlight += 1
                    state.statistics.maxWindow = max(state.statistics.maxWindow, inFlight)
                    group.addTask {
                        do {
                            let reply = try await session.reply(to: ticket)
                            return Completion(operation: op, outcome: .reply(reply, latency: (ContinuousClock.now - ticket.sentAt).seconds))
                        } catch let error as HeadsetError where error.code == .timeout {
                            return Completion(operation: op, outcome: .lost)
                        }
                    }
                }
                guard inFlight > 0, let done = try await group.next() else { break }
                inFlight -= 1
                let op = done.operation
                let s = sector(of: op)
                switch done.outcome {
                case let .reply(reply, latency) where reply.status == .ok:
                    window.acknowledged(after: latency)
                    guard current(op) else { break }
                    switch op {
                    case .erase: state.erased(s)
                    case let .write(offset, _):
                        state.wrote(offset)
                        anyWriteDone = true
                    }
                case let .reply(reply, _) where reply.status == .notReady:
                    window.lost()
                    state.statistics.resent += 1
                    guard current(op) else { break }
                    if case .write = op { queue.prepend(op) } else { try redo(s, because: "erase answered NotReady") }
                case let .reply(reply, _):
                    try UpdateError.checkBusy(reply)
                    guard current(op) else { break }
                    if case .erase = op, reply.status == .exceededLimits {
                        throw UpdateError(.deviceRefused, "the device refuses to erase sector \(s) of the \(plan.region.rawValue) region (\(reply.status))")
                    }
                    let what = op.isErase ? "erase" : "write at 0x" + String(op.offset, radix: 16)
                    try redo(s, because: "\(what) answered \(reply.status)")
                case .lost:
                    window.lost()
                    state.statistics.resent += 1
                    guard current(op) else { break }
                    if case .write = op { queue.prepend(op) } else { try redo(s, because: "erase not answered") }
                }
                report()
            }
        }
    }

    private func packet(for op: Operation) throws -> Packet {
        do {
            switch op {
            case let .erase(s, _):
                return try BootRequests.eraseSector(plan.region, index: UInt32(s), addressed: addressedErase, session.style)
            case let .write(offset, _):
                return try BootRequests.writeBlock(plan.region, offset: UInt32(offset),
                                                   data: Array(plan.padded[offset..<(offset + FlashRegion.blockSize)]), session.style)
            }
        } catch {
            throw UpdateError(.badImage, "cannot encode a flash request: \(error.message)")
        }
    }
}

extension TransferPipeline.Operation {
    var isErase: Bool { if case .erase = self { return true } else { return false } }
    var offset: Int {
        switch self {
        case let .erase(s, _): return s * FlashRegion.sectorSize
        case let .write(o, _): return o
        }
    }
}

/// A FIFO of operations that also takes urgent ones at the front.
struct OperationQueue {
    private var items: [TransferPipeline.Operation] = []
    private var head = 0

    mutating func append(_ op: TransferPipeline.Operation) { items.append(op) }
    mutating func append(contentsOf ops: [TransferPipeline.Operation]) { items.append(contentsOf: ops) }

    mutating func prepend(_ op: TransferPipeline.Operation) {
        if head > 0 {
            head -= 1
            items[head] = op
        } else {
            items.insert(op, at: 0)
        }
    }

    mutating func next() -> TransferPipeline.Operation? {
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
