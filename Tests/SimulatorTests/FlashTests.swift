import Firmware
import LightX
import Testing
import Transport
@testable import HeadsetSimulator

@Suite struct FlashTests {
    static let appBase = FlashMap.application.lowerBound

    @Test func eraseSetsTheWholeSectorToFF() {
        var flash = NORFlash(contents: [UInt8](repeating: 0, count: FlashMap.size), timing: .instant)
        let op = flash.eraseSector(containing: Self.appBase + 5000)
        #expect(op.status == .ok)
        #expect(op.touched == (Self.appBase + 4096)..<(Self.appBase + 8192))
        #expect(flash[(Self.appBase + 4096)..<(Self.appBase + 8192)].allSatisfy { $0 == 0xFF })
        #expect(flash[Self.appBase + 4095] == 0 && flash[Self.appBase + 8192] == 0, "neighbouring sectors untouched")
    }

    @Test func programOnlyClearsBits() {
        var flash = NORFlash(timing: .instant)
        #expect(flash.program(at: Self.appBase, [0xF0, 0x0F, 0xAA]).status == .ok)
        #expect(Array(flash[Self.appBase..<(Self.appBase + 3)]) == [0xF0, 0x0F, 0xAA])
        // Programming again ANDs: bits never come back to 1 without an erase.
        #expect(flash.program(at: Self.appBase, [0x3C, 0xFF, 0x55]).status == .ok)
        #expect(Array(flash[Self.appBase..<(Self.appBase + 3)]) == [0x30, 0x0F, 0x00])
        _ = flash.eraseSector(containing: Self.appBase)
        #expect(Array(flash[Self.appBase..<(Self.appBase + 3)]) == [0xFF, 0xFF, 0xFF])
    }

    @Test func programStaysWithinOnePage() {
        var flash = NORFlash(timing: .instant)
        #expect(flash.program(at: Self.appBase, [UInt8](repeating: 0, count: 256)).status == .ok)
        #expect(flash.program(at: Self.appBase + 200, [UInt8](repeating: 0, count: 100)).status == .outOfRange)
        #expect(flash.program(at: Self.appBase + 256, [UInt8](repeating: 0, count: 257)).status == .outOfRange)
        #expect(flash.program(at: Self.appBase, [UInt8]()).status == .outOfRange)
        #expect(flash.program(at: FlashMap.size - 1, [0]).status == .ok)
        #expect(flash.program(at: FlashMap.size, [0]).status == .outOfRange)
        #expect(flash.program(at: -1, [0]).status == .outOfRange)
        #expect(flash.eraseSector(containing: FlashMap.size).status == .outOfRange)
        #expect(flash.statistics.operations == 2, "refusals are not operations")
    }

    @Test func theBootloaderIsWriteProtected() {
        var flash = NORFlash(contents: FactoryFirmware.flashContents, timing: .standard)
        let before = Array(flash[FlashMap.bootloader])
        #expect(flash.eraseSector(containing: 0).status == .protected)
        #expect(flash.eraseSector(containing: FlashMap.bootloader.upperBound - 1).status == .protected)
        #expect(flash.program(at: 0x100, [0]).status == .protected)
        #expect(Array(flash[FlashMap.bootloader]) == before)
        #expect(flash.statistics.operations == 0 && flash.statistics.busyTime == .zero)
        // The first byte after it is writable.
        #expect(flash.eraseSector(containing: FlashMap.bootloader.upperBound).status == .ok)
    }

    @Test func timingIsAccountedPerOperation() {
        var flash = NORFlash(timing: .standard)
        #expect(flash.eraseSector(containing: Self.appBase).busy == .milliseconds(45))
        #expect(flash.program(at: Self.appBase, [1, 2]).busy == .microseconds(700))
        #expect(flash.program(at: Self.appBase + 256, [UInt8](repeating: 1, count: 256)).busy == .microseconds(700))
        let (_, readBusy) = flash.read(at: Self.appBase, count: 256)
        #expect(readBusy == .nanoseconds(12_800), "256 bytes at 20 MB/s")
        let (_, crcBusy) = flash.crc(of: FlashMap.application)
        #expect(crcBusy == .nanoseconds(26_214_400), "512 KiB at 20 MB/s")
        let s = flash.statistics
        #expect(s.operations == 3 && s.erases == 1 && s.programs == 2 && s.bytesProgrammed == 258)
        #expect(s.reads == 2 && s.bytesRead == 256 + 512 * 1024)
        #expect(s.eraseTime == .milliseconds(45) && s.programTime == .microseconds(1400))
        #expect(s.busyTime == .milliseconds(45) + .microseconds(1400) + .nanoseconds(12_800 + 26_214_400))
    }

    @Test func timeScaleMultipliesEveryDuration() {
        let half = DeviceTiming.standard.scaled(by: 0.5)
        #expect(half.sectorErase == .microseconds(22_500) && half.pageProgram == .microseconds(350))
        #expect(half.readyDelay == .milliseconds(750) && half.powerUpDelay == .milliseconds(150))
        #expect(half.readTime(bytes: 20_000) == .microseconds(500))
        for zero in [0.0, -1, .nan] {
            let t = DeviceTiming.standard.scaled(by: zero)
            #expect(t == .instant && t.readTime(bytes: 1 << 20) == .zero)
        }
        #expect(DeviceTiming.standard.scaled(by: .infinity) == .standard)
        var flash = NORFlash(timing: DeviceTiming.standard.scaled(by: 0))
        #expect(flash.eraseSector(containing: Self.appBase).busy == .zero)
    }

    @Test func readAndCRCMatchTheContents() {
        var flash = NORFlash(contents: FactoryFirmware.flashContents, timing: .instant)
        let image = FactoryFirmware.image.bytes
        #expect(flash.read(at: Self.appBase, count: 300).bytes == Array(image.prefix(300)))
        #expect(flash.read(at: FlashMap.size - 2, count: 10).bytes.count == 2, "clamped to the flash")
        let (sectors, crc) = TestImages.sectorsAndCRC(image)
        #expect(flash.crc(of: Self.appBase..<(Self.appBase + Int(sectors) * 4096)).crc == crc)
    }

    @Test func injectedFailureLeavesFlashUnchanged() {
        var flash = NORFlash(timing: .instant, faults: FlashFaults(failAt: [2]))
        #expect(flash.program(at: Self.appBase, [0]).status == .ok)
        #expect(flash.program(at: Self.appBase + 1, [0]).status == .failed)
        #expect(flash[Self.appBase + 1] == 0xFF)
        #expect(flash.program(at: Self.appBase + 1, [0]).status == .ok, "only operation 2 fails")
        #expect(flash.statistics.injectedFailures == 1 && flash.statistics.operations == 3)
    }

    @Test func tornEraseLeavesEachByteOldOrErased() {
        let old = [UInt8](repeating: 0x5A, count: FlashMap.size)
        var flash = NORFlash(contents: old, timing: .instant, faults: FlashFaults(powerCutAt: [1], seed: 9))
        let op = flash.eraseSector(containing: Self.appBase)
        #expect(op.status == .powerCut && op.touched == Self.appBase..<(Self.appBase + 4096))
        let sector = flash[Self.appBase..<(Self.appBase + 4096)]
        #expect(sector.allSatisfy { $0 == 0x5A || $0 == 0xFF })
        let erased = sector.filter { $0 == 0xFF }.count
        #expect(erased > 1000 && erased < 3096, "about half the bytes: \(erased)")
        #expect(flash.statistics.powerCuts == 1)
        // The same seed tears the same way.
        var again = NORFlash(contents: old, timing: .instant, faults: FlashFaults(powerCutAt: [1], seed: 9))
        _ = again.eraseSector(containing: Self.appBase)
        #expect(again[Self.appBase..<(Self.appBase + 4096)] == sector)
    }

    @Test func tornProgramWritesAProperPrefix() {
        let data = [UInt8](repeating: 0x00, count: 256)
        var prefixes: Set<Int> = []
        for seed: UInt64 in 0..<20 {
            var flash = NORFlash(timing: .instant, faults: FlashFaults(powerCutAt: [1], seed: seed))
            #expect(flash.program(at: Self.appBase, data).status == .powerCut)
            let page = Array(flash[Self.appBase..<(Self.appBase + 256)])
            let written = page.prefix { $0 == 0 }.count
            #expect(written < 256, "a torn program never completes")
            #expect(page[written...].allSatisfy { $0 == 0xFF }, "only a prefix is written")
            prefixes.insert(written)
        }
        #expect(prefixes.count > 10, "the prefix length varies with the seed")
    }
}

@Suite struct CommitLogTests {
    func record(_ n: UInt32) -> CommitRecord {
        CommitRecord(sequence: n, sectors: n % 100 + 1, crc: n &* 2_654_435_761, version: ImageVersion(major: 1, minor: 2, revision: UInt16(n)))
    }

    @Test func recordsRoundTripAndRejectCorruption() {
        let r = record(7)
        let bytes = r.encoded
        #expect(bytes.count == CommitRecord.size)
        #expect(CommitRecord(decoding: bytes[...]) == r)
        for k in 0..<bytes.count {
            var bad = bytes
            bad[k] ^= 0x10
            #expect(CommitRecord(decoding: bad[...]) == nil, "a flipped bit at byte \(k) must be detected")
        }
        for n in 0..<CommitRecord.size {
            let torn = Array(bytes.prefix(n)) + [UInt8](repeating: 0xFF, count: CommitRecord.size - n)
            if torn != bytes { #expect(CommitRecord(decoding: torn[...]) == nil, "a record torn after \(n) bytes") }
        }
    }

    /// Appends like the bootloader does (`latest` tracks the newest record, saving a scan per append).
    func append(_ r: CommitRecord, to flash: inout NORFlash, latest: inout CommitLog.Entry?) {
        let plan = CommitLog.plan(after: latest, in: flash)
        if let sector = plan.eraseSectorAt { #expect(flash.eraseSector(containing: sector).status == .ok) }
        #expect(flash.program(at: plan.address, r.encoded).status == .ok)
        latest = CommitLog.Entry(slot: (plan.address - CommitLog.area.lowerBound) / CommitRecord.size, record: r)
    }

    func append(_ r: CommitRecord, to flash: inout NORFlash) {
        var latest = CommitLog.latest(in: flash)
        append(r, to: &flash, latest: &latest)
    }

    @Test func theNewestValidRecordWinsAndTheRingWraps() async {
        var flash = NORFlash(timing: .instant)
        #expect(CommitLog.latest(in: flash) == nil)
        var latest: CommitLog.Entry?
        for n: UInt32 in 1...2100 {
            await Task.yield()  // a long loop in a debug build: let the cooperative pool's other tasks run
            append(record(n), to: &flash, latest: &latest)
            if n % 300 == 0 || n > 2045 && n < 2052 { #expect(CommitLog.latest(in: flash) == latest) }
        }
        // 2100 records in a ring of 2048 slots: the first sector was erased and reused.
        #expect(CommitLog.latest(in: flash)?.slot == 2099 - 2048)
        #expect(flash.statistics.erases == 1)
    }

    @Test func aTornRecordIsSkippedAndNeverWins() {
        var flash = NORFlash(timing: .instant)
        append(record(1), to: &flash)
        // A torn append: only a prefix of record 2.
        let plan = CommitLog.plan(after: CommitLog.latest(in: flash), in: flash)
        _ = flash.program(at: plan.address, record(2).encoded.prefix(20))
        #expect(CommitLog.latest(in: flash)?.record == record(1))
        // The next append goes past the dirty slot.
        let next = CommitLog.plan(after: CommitLog.latest(in: flash), in: flash)
        #expect(next.address == plan.address + CommitRecord.size && next.eraseSectorAt == nil)
        append(record(3), to: &flash)
        #expect(CommitLog.latest(in: flash)?.record == record(3))
    }

    @Test func aTornEraseOfTheNextSectorKeepsTheNewestRecord() {
        var flash = NORFlash(timing: .instant)
        // Fill the whole ring so the next append must erase sector 0 (the oldest).
        var latest: CommitLog.Entry?
        for n in 1...UInt32(CommitLog.slotCount) { append(record(n), to: &flash, latest: &latest) }
        let newest = CommitLog.latest(in: flash)
        #expect(newest?.record.sequence == UInt32(CommitLog.slotCount))
        var torn = flash
        torn.faults = FlashFaults(powerCutAt: [torn.statistics.operations + 1], seed: 3)
        let plan = CommitLog.plan(after: newest, in: torn)
        #expect(plan.eraseSectorAt == CommitLog.area.lowerBound)
        #expect(torn.eraseSector(containing: plan.eraseSectorAt!).status == .powerCut)
        #expect(CommitLog.latest(in: torn)?.record == newest?.record, "the newest record lives in another sector")
    }
}
