import Headset
import LightX
import Testing
@testable import FirmwareUpdate

/// The transfer's decisions on their own: no device, no link, no clock.
@Suite struct TransferMachineTests {
    typealias Op = TransferMachine.Operation

    /// Three sectors: the first full, the second with 2 blocks of data (the rest blank, never written), the third
    /// 1000 bytes (4 blocks).
    static let image: [UInt8] = {
        var bytes = (0..<(2 * FlashRegion.sectorSize + 1000)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        for i in (FlashRegion.sectorSize + 2 * FlashRegion.blockSize)..<(2 * FlashRegion.sectorSize) { bytes[i] = 0xFF }
        return bytes
    }()
    static let plan = TransferPlan(region: .application, image: image)

    static func machine(window: Int? = nil, limit: Int = 16, eraseFirst: Bool = false) -> TransferMachine {
        var m = TransferMachine(program: plan, addressedErase: true, eraseFirst: eraseFirst,
                                window: WindowControl(fixed: window, limit: limit, maxTimeout: .seconds(2)))
        m.resume()
        return m
    }

    /// Every operation the machine issues now.
    static func issue(_ m: inout TransferMachine) -> [Op] {
        var ops: [Op] = []
        while let op = m.next() { ops.append(op) }
        return ops
    }

    /// The next operation, which there must be.
    static func take(_ m: inout TransferMachine, sourceLocation: SourceLocation = #_sourceLocation) throws -> Op {
        let op = m.next()
        return try #require(op, sourceLocation: sourceLocation)
    }

    static func sector(_ s: Int, gen: Int = 0) -> [Op] {
        [.erase(sector: s, generation: gen)] + plan.blocks(in: s).map { .write(offset: $0, generation: gen) }
    }

    @Test func issuesInPlanOrderSkippingBlankBlocks() {
        var m = Self.machine(window: 64, limit: 64)
        #expect(m.bytesTotal == (16 + 2 + 4) * FlashRegion.blockSize && m.sectorsTotal == 3)
        #expect(Self.issue(&m) == Self.sector(0) + Self.sector(1) + Self.sector(2))
        var first = Self.machine(window: 1, limit: 64, eraseFirst: true)
        var order: [Op] = []
        while let op = first.next() {
            order.append(op)
            try? first.complete(op, .ok(latency: 0.01))
        }
        #expect(order.prefix(3) == [.erase(sector: 0, generation: 0), .erase(sector: 1, generation: 0), .erase(sector: 2, generation: 0)])
        #expect(first.isComplete && first.workFraction == 1)
    }

    @Test func windowGrowsWithFastRepliesAndShrinks() throws {
        var m = Self.machine(limit: 10)
        #expect(m.window.size == 8)
        let ops = Self.issue(&m)
        #expect(ops.count == 8 && m.inFlight == 8 && m.next() == nil)
        try m.complete(ops[0], .ok(latency: 0.01))
        #expect(m.window.size == 9)
        try m.complete(ops[1], .ok(latency: 0.01))
        try m.complete(ops[2], .ok(latency: 0.01))
        #expect(m.window.size == 10, "never beyond the limit")
        // Slower than the latency target (a quarter of the 2 s timeout): the requests are queueing.
        try m.complete(ops[3], .ok(latency: 0.9))
        #expect(m.window.size == 9)
        try m.complete(ops[4], .lost)
        #expect(m.window.size == 4, "a loss halves the window")
        try m.complete(ops[5], .refused(BootAnswer(status: .notReady), latency: 0.01))
        #expect(m.window.size == 2, "NotReady halves it too")
        try m.complete(ops[6], .lost)
        try m.complete(ops[7], .lost)
        #expect(m.window.size == 1, "never below one")
        #expect(m.state.statistics.resent == 4 && m.state.statistics.maxWindow == 8)
    }

    /// The reply timeout is RFC 6298's: the smoothed round trip plus four times its variation, bounded by 1 s and the
    /// session's timeout; the maximum before any reply (issue 31 §5: one times the variation survived the suite).
    @Test func theReplyTimeoutIsTheSmoothedRoundTripPlusFourVariations() {
        var w = WindowControl(fixed: nil, limit: 8, maxTimeout: .seconds(30))
        #expect(w.timeout == .seconds(30), "no reply yet: the session's timeout")
        w.acknowledged(after: 1.0)  // srtt 1.0, rttvar 0.5
        #expect(w.timeout == .seconds(3))
        w.acknowledged(after: 3.0)  // rttvar 0.75 * 0.5 + 0.25 * 2 = 0.875, srtt 0.875 + 0.375 = 1.25
        #expect(w.timeout == .milliseconds(4750))
        var fast = WindowControl(fixed: nil, limit: 8, maxTimeout: .seconds(30))
        fast.acknowledged(after: 0.01)
        #expect(fast.timeout == .seconds(1), "never below a second")
        var slow = WindowControl(fixed: nil, limit: 8, maxTimeout: .seconds(2))
        slow.acknowledged(after: 1.5)
        #expect(slow.timeout == .seconds(2), "never beyond the session's timeout")
    }

    @Test func fixedWindowStaysPut() throws {
        var m = Self.machine(window: 3)
        let ops = Self.issue(&m)
        #expect(ops.count == 3)
        try m.complete(ops[0], .lost)
        try m.complete(ops[1], .ok(latency: 0.01))
        #expect(m.window.size == 3)
    }

    @Test func lostWriteIsSentAgainFirst() throws {
        var m = Self.machine(window: 4)
        let ops = Self.issue(&m)  // erase 0, three writes
        try m.complete(ops[0], .ok(latency: 0.01))
        try m.complete(ops[2], .lost)
        #expect(m.next() == ops[2], "the lost write goes out before anything else")
        #expect(m.state.statistics.redoneSectors == 0)
    }

    @Test func lostEraseRedoesTheWholeSectorAndIgnoresStaleReplies() throws {
        var m = Self.machine(window: 64, limit: 64)
        let ops = Self.issue(&m)
        try m.complete(ops[0], .lost)  // erase of sector 0
        #expect(m.state.statistics.redoneSectors == 1)
        // Its writes were already in flight: their acknowledgements belong to the old generation and do not count.
        for op in ops[1...16] { try m.complete(op, .ok(latency: 0.01)) }
        #expect(m.state.written(in: 0).isEmpty && !m.state.isErased(0))
        for op in ops[17...] { try m.complete(op, .ok(latency: 0.01)) }
        #expect(Self.issue(&m) == Self.sector(0, gen: 1), "the sector is redone after what was queued")
        #expect(!m.isComplete)
    }

    @Test func failedWriteRedoesTheSector() throws {
        var m = Self.machine(window: 2)
        let ops = Self.issue(&m)
        try m.complete(ops[0], .ok(latency: 0.01))
        try m.complete(ops[1], .refused(BootAnswer(status: .fail), latency: 0.01))
        #expect(m.state.statistics.redoneSectors == 1 && !m.state.isErased(0))
    }

    @Test func aSectorThatKeepsFailingEndsTheTransfer() throws {
        var m = Self.machine(window: 1)
        var failures = 0
        let error = #expect(throws: UpdateError.self) {
            while let op = m.next() {
                if case .erase(0, _) = op {
                    failures += 1
                    try m.complete(op, .refused(BootAnswer(status: .fail), latency: 0.01))
                } else {
                    try m.complete(op, .ok(latency: 0.01))
                }
            }
        }
        #expect(error?.code == .deviceRefused && failures == TransferMachine.maxRedos + 1)
        #expect(error?.message.contains("sector 0") == true, "\(error?.message ?? "")")
    }

    @Test func refusalsThatEndAtOnce() throws {
        var busy = Self.machine(window: 1)
        let op = try Self.take(&busy)
        #expect(throws: UpdateError(.deviceBusy, "")) {
            try busy.complete(op, .refused(BootAnswer(status: .fail, reason: .busy), latency: 0.01))
        }
        var limits = Self.machine(window: 1)
        let erase = try Self.take(&limits)
        #expect(throws: UpdateError(.deviceRefused, "")) {
            try limits.complete(erase, .refused(BootAnswer(status: .exceededLimits), latency: 0.01))
        }
    }

    @Test func resumeKeepsWhatTheDeviceAcknowledged() throws {
        var m = Self.machine(window: 64, limit: 64)
        let ops = Self.issue(&m)
        // Sector 0 erased and 5 blocks written; sector 1 erased; then the link drops.
        for op in ops[0...5] + [ops[17]] { try m.complete(op, .ok(latency: 0.01)) }
        m.linkLost()
        #expect(m.inFlight == 0 && m.next() == nil, "nothing in flight is waited for")
        #expect(m.window.size == 64, "a fixed window stays")
        var adaptive = Self.machine(limit: 64)
        adaptive.linkLost()
        #expect(adaptive.window.size == 4, "the next link gets half the window")
        m.resume()
        let blocks0 = Self.plan.blocks(in: 0)
        let expected: [Op] = blocks0.dropFirst(5).map { .write(offset: $0, generation: 0) }
            + Self.plan.blocks(in: 1).map { .write(offset: $0, generation: 0) } + Self.sector(2)
        #expect(Self.issue(&m) == expected, "erased sectors continue with their unacknowledged blocks")
        #expect(m.bytesDone == 5 * FlashRegion.blockSize && m.state.sectorsErased == 2)
    }

    @Test func verifiedSectorsAreNeverErasedAgain() throws {
        var m = Self.machine(window: 64, limit: 64)
        m.linkLost()
        m.resume(verifiedPrefix: 2)
        #expect(Self.issue(&m) == Self.sector(2))
        #expect(m.bytesDone == 18 * FlashRegion.blockSize, "what the device holds counts as done")
        // A later resume that finds less in place (a shorter CRC prefix) keeps what was verified.
        m.linkLost()
        m.resume(verifiedPrefix: 0)
        #expect(Self.issue(&m) == Self.sector(2))
    }

    @Test func mismatchRedoesFromTheFirstBadSector() throws {
        var m = Self.machine(window: 1)
        while let op = m.next() { try m.complete(op, .ok(latency: 0.01)) }
        #expect(m.isComplete)
        // The final CRC did not match; the device holds the first sector only.
        m.resume(verifiedPrefix: 1, afterMismatch: true)
        #expect(!m.isComplete)
        var redone: [Op] = []
        while let op = m.next() { redone.append(op); try m.complete(op, .ok(latency: 0.01)) }
        #expect(redone == Self.sector(1) + Self.sector(2))
        #expect(m.isComplete)
    }

    /// A whole transfer against a modelled device that loses a fifth of the replies at random: the machine ends
    /// with every block of the image on the device, and never more requests in flight than the window allows.
    @Test(arguments: [1, 7, 42]) func completesThroughLosses(seed: UInt64) throws {
        var rng = TestRandom(seed: seed)
        var m = Self.machine(limit: 12)
        var flash = [UInt8](repeating: 0, count: Self.plan.padded.count)
        var inFlight: [(Op, BootOperation)] = []
        var steps = 0
        while true {
            while let op = m.next() {
                inFlight.append((op, m.request(for: op)))
                #expect(inFlight.count <= m.window.limit)
            }
            guard !inFlight.isEmpty else { break }
            // The device executes in order; the reply may get lost.
            let (op, request) = inFlight.removeFirst()
            switch request {
            case let .erase(_, sector, _):
                flash.replaceSubrange((sector * 4096)..<((sector + 1) * 4096), with: repeatElement(0xFF, count: 4096))
            case let .write(_, offset, data):
                flash.replaceSubrange(offset..<(offset + data.count), with: data)
            case .read: Issue.record("no reads in a program transfer")
            }
            try m.complete(op, rng.next() % 5 == 0 ? .lost : .ok(latency: 0.02))
            steps += 1
            #expect(steps < 10_000)
        }
        #expect(m.isComplete && flash == Self.plan.padded)
        #expect(m.workFraction == 1 && m.bytesDone == m.bytesTotal)
    }

    // MARK: Reading back

    static func reader(length: Int = 1000, window: Int = 2) -> TransferMachine {
        var m = TransferMachine(readBack: .resource, from: 0x100, length: length,
                                window: WindowControl(fixed: window, limit: window, maxTimeout: .seconds(2)))
        m.resume()
        return m
    }

    static func data(at offset: Int, _ count: Int) -> ArraySlice<UInt8> {
        ArraySlice((0..<count).map { UInt8(truncatingIfNeeded: offset + $0) })
    }

    @Test func readsEveryBlockOnceAndResumesWithTheRest() throws {
        var m = Self.reader(window: 2)
        let first = Self.issue(&m)
        #expect(first == [.read(offset: 0, count: 256), .read(offset: 256, count: 256)])
        #expect(m.request(for: first[1]) == .read(.resource, offset: 0x100 + 256, count: 256))
        // The second answers before the first: the read's progress waits for the gap to close.
        try m.complete(first[1], .ok(latency: 0.01, data: Self.data(at: 256, 256)))
        #expect(m.readPrefix == 0)
        try m.complete(first[0], .ok(latency: 0.01, data: Self.data(at: 0, 256)))
        #expect(m.readPrefix == 512)
        let third = Self.issue(&m)
        #expect(third == [.read(offset: 512, count: 256), .read(offset: 768, count: 232)], "the last block is short")
        try m.complete(third[1], .ok(latency: 0.01, data: Self.data(at: 768, 232)))
        m.linkLost()
        m.resume()
        #expect(Self.issue(&m) == [.read(offset: 512, count: 256)], "only what was not read")
        try m.complete(.read(offset: 512, count: 256), .ok(latency: 0.01, data: Self.data(at: 512, 256)))
        #expect(m.isComplete && m.readPrefix == 1000 && m.workFraction == 1)
        #expect(m.readBytes == Array(Self.data(at: 0, 1000)))
    }

    @Test func lostReadsAreSentAgainUntilTheLinkLooksDead() throws {
        var m = Self.reader(window: 1)
        let op = try Self.take(&m)
        try m.complete(op, .lost)
        #expect(m.next() == op)
        try m.complete(op, .lost)
        #expect(m.next() == op)
        let error = #expect(throws: HeadsetError.self) { try m.complete(op, .lost) }
        #expect(error?.code == .timeout && error?.category == .connection)
        // One answered read resets the count.
        var n = Self.reader(window: 1)
        let a = try Self.take(&n)
        try n.complete(a, .lost)
        try n.complete(try Self.take(&n), .ok(latency: 0.01, data: Self.data(at: 0, 256)))
        let b = try Self.take(&n)
        try n.complete(b, .lost)
        try n.complete(try Self.take(&n), .lost)
        #expect(n.next() == b)
    }

    @Test func readRefusalsAndShortReplies() throws {
        var m = Self.reader()
        let op = try Self.take(&m)
        let refused = #expect(throws: UpdateError.self) { try m.complete(op, .refused(BootAnswer(status: .notFound), latency: 0)) }
        #expect(refused?.code == .deviceRefused && refused?.message.contains("0x100") == true)
        var n = Self.reader()
        let read = try Self.take(&n)
        let short = #expect(throws: UpdateError.self) { try n.complete(read, .ok(latency: 0, data: [1, 2, 3])) }
        #expect(short?.message.contains("3 bytes for a 256-byte read") == true)
    }
}

