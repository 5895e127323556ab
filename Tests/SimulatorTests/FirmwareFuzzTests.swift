import LightX
import Support
import Testing
import Transport
@testable import HeadsetSimulator

@Suite struct FirmwareFuzzTests {
    static let interestingCommands: [UInt8] = [
        0x01, 0x04, 0x06, 0x11, 0x1D, 0x1E, 0x20, 0x22, 0x23, 0x24, 0x25, 0x3A, 0x7F, 0x81, 0x83, 0x84, 0x85, 0x86,
        0x87, 0x88, 0x89, 0x8A, 0x8B, 0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x9A, 0xA0, 0xB0, 0xB5,
        0xB6, 0xB7,
    ]
    static let interestingLengths = [0, 1, 3, 4, 8, 11, 12, 15, 16, 44, 47, 48, 256]

    static func randomPacket(_ rng: inout SeededRandom) -> Packet {
        func pick<T>(_ choices: [T]) -> T { choices[Int(rng.next() % UInt64(choices.count))] }
        func chance(_ percent: UInt64) -> Bool { rng.next() % 100 < percent }
        func byte() -> UInt8 { UInt8(truncatingIfNeeded: rng.next()) }
        let destination = chance(85) ? ModuleID.application : ModuleID(rawValue: byte())
        let opcodeByte: UInt8 = chance(85) ? pick([0x81, 0x82, 0x01, 0x02]) : byte()
        let command: UInt8 = chance(80) ? pick(interestingCommands) : byte()
        let address: UInt32 = chance(80) ? (chance(50) ? 0 : 0x04_0000) : UInt32(truncatingIfNeeded: rng.next()) & 0xFF_FFFF
        let length = chance(70) ? pick(interestingLengths) : Int(rng.next() % 257)
        var buffer = [UInt8](repeating: 0, count: length)
        let style = rng.next() % 4
        for k in 0..<length {
            switch style {
            case 0: buffer[k] = byte()
            case 1: buffer[k] = k % 4 == 0 ? UInt8(rng.next() % 12) : 0          // small u32 values
            case 2: buffer[k] = k % 4 == 3 ? pick([0x00, 0xFF, 0x3F, 0x7F]) : byte()  // floats/negatives
            default: buffer[k] = chance(90) ? 0 : byte()
            }
        }
        let header = Header(source: chance(90) ? .bluetooth : ModuleID(rawValue: byte()), destination: destination,
                            opcodeByte: opcodeByte, statusByte: byte(),
                            param0: UInt32(command) << 24 | address,
                            param1: chance(90) ? UInt32(length) : UInt32(truncatingIfNeeded: rng.next()))
        // Lengths are at most 256.
        return try! Packet(header: header, buffer: buffer)
    }

    /// (The fuzz loops yield to the cooperative pool's other tasks every 500 packets: seconds of work in a debug build.)
    @Test func randomPacketsAlwaysGetExactlyOneWellFormedReply() async throws {
        var rng = SeededRandom(seed: 0xF022)
        var fw = ApplicationFirmware(randomSeed: 3)
        var statuses: [Status: Int] = [:]
        for n in 0..<100_000 {
            if n % 500 == 0 { await Task.yield() }
            let request = Self.randomPacket(&rng)
            let out = fw.handle(request)
            guard out.count == 1 else {
                Issue.record("request \(n) (\(request)) got \(out.count) packets")
                return
            }
            let reply = out[0]
            if reply.header.param0 != request.header.param0 || reply.opcode != request.opcode
                || reply.header.type != .result || reply.header.param1 != UInt32(reply.buffer.count) || !reply.status.isKnown {
                Issue.record("request \(n) (\(request)) got a malformed reply \(reply)")
                return
            }
            statuses[reply.status, default: 0] += 1
            if n % 1000 == 0 {
                // Whatever was accepted, the state stays valid (and would load again).
                try fw.state.validate()
            }
        }
        try fw.state.validate()
        // The fuzzer reaches every outcome class.
        for status in [Status.ok, .fail, .notFound, .notSupported, .exceededLimits] {
            #expect(statuses[status, default: 0] > 100, "\(status) seen \(statuses[status, default: 0]) times")
        }
    }

    static let bootCommands: [UInt8] = Array(0x20...0x3F) + [0x01, 0x06, 0x1E, 0x7F, 0x85]

    /// A random request aimed at the bootloader: Boot commands with plausible sector indices, offsets and lengths.
    static func randomBootPacket(_ rng: inout SeededRandom) -> Packet {
        func pick<T>(_ choices: [T]) -> T { choices[Int(rng.next() % UInt64(choices.count))] }
        func chance(_ percent: UInt64) -> Bool { rng.next() % 100 < percent }
        guard chance(85) else { return randomPacket(&rng) }
        let command = pick(bootCommands)
        let address: UInt32 = chance(40) ? 0 : chance(30) ? UInt32(rng.next() % 4) * 4096 : chance(30) ? UInt32(rng.next() % 330) * 4096
            : (chance(50) ? UInt32(rng.next() % (1 << 21)) : pick([0x04_0000, 0x0C_0000]))
        let length = pick([0, 1, 3, 4, 8, 11, 12, 13, 256, Int(rng.next() % 257)])
        var buffer = [UInt8](repeating: 0, count: length)
        for k in 0..<length {
            buffer[k] = k % 4 == 0 ? UInt8(truncatingIfNeeded: rng.next() % (chance(50) ? 4 : 200)) : (chance(80) ? 0 : UInt8(truncatingIfNeeded: rng.next()))
        }
        let header = Header(source: .bluetooth, destination: chance(95) ? .application : .usb,
                            opcodeByte: chance(90) ? pick([0x81, 0x82]) : UInt8(truncatingIfNeeded: rng.next()), statusByte: 0,
                            param0: UInt32(command) << 24 | address, param1: UInt32(length))
        return try! Packet(header: header, buffer: buffer)
    }

    @Test func bootloaderAnswersRandomPacketsWithExactlyOneWellFormedReply() async throws {
        var rng = SeededRandom(seed: 0xB007)
        var m = DeviceMachine.testDevice()
        var statuses: [Status: Int] = [:]
        var jumps = 0
        for n in 0..<30_000 {
            if n % 500 == 0 { await Task.yield() }
            if m.state != .bootloader {
                jumps += 1
                try m.enterBootloaderForTest()
            } else if n % 20 == 0 && !m.bootloader.isAuthenticated {
                try m.authenticate()
            }
            let request = Self.randomBootPacket(&rng)
            let step = m.handle(request, now: .now)
            guard step.replies.count == 1, !step.powerCut else {
                Issue.record("request \(n) (\(request)) got \(step.replies.count) packets")
                return
            }
            let reply = step.replies[0]
            if reply.header.param0 != request.header.param0 || reply.opcode != request.opcode
                || reply.header.type != .result || reply.header.param1 != UInt32(reply.buffer.count) || !reply.status.isKnown {
                Issue.record("request \(n) (\(request)) got a malformed reply \(reply)")
                return
            }
            statuses[reply.status, default: 0] += 1
        }
        try m.settings.validate()
        for status in [Status.ok, .fail, .notFound, .notSupported, .exceededLimits] {
            #expect(statuses[status, default: 0] > 50, "\(status) seen \(statuses[status, default: 0]) times")
        }
        #expect(m.flash.statistics.erases > 50 && m.flash.statistics.programs > 100, "\(m.flash.statistics), \(statuses), \(jumps) jumps")
        #expect(m.flash[FlashMap.bootloader] == FactoryFirmware.flashContents[FlashMap.bootloader], "the bootloader is never touched")
    }
}
