import Firmware
import LightX
import Testing
import Transport
@testable import HeadsetSimulator

extension DeviceMachine {
    /// Unit `index` of `line`, powered, in its (instantly ready) bootloader, authenticated.
    static func blankUnit(_ line: ProductionLine = ProductionLine(seed: 7), index: Int = 0, faults: FlashFaults = .none,
                          now: ContinuousClock.Instant = .now) throws -> DeviceMachine {
        let config = DeviceConfiguration(index: index, timing: .instant, queueDepth: 32, drainInterval: .zero,
                                         factory: line.unit(index))
        var m = DeviceMachine(config: config, flash: nil, settings: .factory(index: index), randomSeed: 77, faults: faults, now: now)
        m.powerOn(now: now, delayed: false)
        try m.enterBootloaderForTest(at: now)
        return m
    }

    /// A power cycle: RAM lost, flash kept, back in the bootloader (the factory application boots; jump back).
    mutating func powerCycleIntoBootloader() throws {
        powerOff()
        powerOn(now: .now, delayed: false)
        try enterBootloaderForTest()
    }

    func decode<V>(_ setting: Setting<V>, _ reply: Packet) throws -> V { try setting.decode(reply.buffer) }
}

/// Units fresh from assembly (`SimulatorOptions.production`) and the factory commands (docs/protocol.md §7).
@Suite struct FactoryUnitTests {
    static let serial = ConfigStrings.setting(for: .configSerialNumber)!
    static let name = ConfigStrings.setting(for: .configBTDisplayName)!

    @Test func blankUnitState() throws {
        var m = try DeviceMachine.blankUnit()
        #expect(try Self.serial.decode(m.reply(Self.serial.readRequest()).buffer) == "")
        #expect(try Self.name.decode(m.reply(Self.name.readRequest()).buffer) == "Tuneup Sim")
        #expect(m.status(FactorySettings.bluetoothAddress.readRequest()) == .notFound)
        #expect(m.status(FactorySettings.storedCalibration.readRequest()) == .notFound)
        #expect(try m.decode(FactorySettings.calibrationStatus, m.reply(FactorySettings.calibrationStatus.readRequest())) == .none)
        #expect(try m.decode(FactorySettings.lock, m.reply(FactorySettings.lock.readRequest())) == false)
        let id = try m.decode(FactorySettings.hardwareID, m.reply(FactorySettings.hardwareID.readRequest()))
        #expect(id == ProductionLine(seed: 7).unit(0).hardwareID)
        // The factory firmware, committed: the application boots after a power cycle, and answers the uid too.
        m.powerOff()
        m.powerOn(now: .now, delayed: false)
        #expect(m.state == .application)
        #expect(try m.decode(FactorySettings.hardwareID, m.reply(FactorySettings.hardwareID.readRequest())) == id)
        #expect(try Self.serial.decode(m.reply(Self.serial.readRequest()).buffer) == "")
    }

    /// The classic headset has no factory commands: NotSupported, its identity unchanged.
    @Test func classicHeadsetAnswersNotSupported() throws {
        var m = DeviceMachine.testDevice()
        #expect(m.status(FactorySettings.hardwareID.readRequest()) == .notSupported)
        try m.enterBootloaderForTest()
        #expect(m.status(try FactorySettings.writeString("X-1", .configSerialNumber)) == .notSupported)
        #expect(m.status(FactorySettings.startCalibration()) == .notSupported)
        #expect(m.status(FactorySettings.lock.readRequest()) == .notSupported)
        #expect(try Self.serial.decode(m.reply(Self.serial.readRequest()).buffer) == "TS1-000001")
    }

    @Test func uidsAreUniqueOver64UnitsAndDeterministic() {
        let line = ProductionLine(seed: 99)
        let ids = (0..<64).map { line.unit($0).hardwareID }
        #expect(Set(ids).count == 64)
        #expect(ids == (0..<64).map { ProductionLine(seed: 99).unit($0).hardwareID })
        #expect(ids != (0..<64).map { ProductionLine(seed: 100).unit($0).hardwareID })
    }

    /// Nearby seeds are independent lines: the eight units of seeds 0...7 are eight different sets of spreads and
    /// failing units (not one set in another order, as when the seed was XORed with the index).
    @Test func nearbySeedsMakeIndependentLines() {
        let lines = (0..<8).map { seed in (0..<8).map { ProductionLine(seed: UInt64(seed), failShare: 0.5).unit($0) } }
        let spreads = lines.map { Set($0.map(\.microphoneOffsets)) }
        #expect(Set(spreads).count == 8, "every seed its own units")
        for k in 1..<lines.count {
            #expect(spreads[k].isDisjoint(with: spreads[0]), "seed \(k) shares a unit's spread with seed 0")
        }
        let failing = lines.map { $0.map(\.failsLimit) }
        #expect(Set(failing).count > 1, "which units fail differs from seed to seed: \(failing)")
    }

    /// The lines the docs show: docs/provisioning.md's four units of seed 8 at 25 % include one failing unit, and
    /// docs/records.md's twelve of seed 20 at 30 % exactly one (its report says "failed 1").
    @Test func theDocumentedLinesFailAsTheDocsSay() {
        let quickStart = (0..<4).filter { ProductionLine(seed: 8, failShare: 0.25).unit($0).failsLimit }
        #expect(quickStart.count == 1, "docs/provisioning.md's example shows a failing unit: \(quickStart)")
        let report = (0..<12).filter { ProductionLine(seed: 20, failShare: 0.3).unit($0).failsLimit }
        #expect(report.count == 1, "docs/records.md's report: failed 1, got \(report)")
    }

    @Test func spreadIsPerUnitDeterministicPerSeedAndHasAYield() {
        let line = ProductionLine(seed: 3, failShare: 0.25)
        let units = (0..<64).map { line.unit($0) }
        #expect(units == (0..<64).map { ProductionLine(seed: 3, failShare: 0.25).unit($0) })
        #expect(Set(units.map(\.microphoneOffsets)).count > 60, "each unit has its own spread")
        #expect(units.map(\.microphoneOffsets) != (0..<64).map { ProductionLine(seed: 4, failShare: 0.25).unit($0).microphoneOffsets })
        let failing = units.filter(\.failsLimit)
        #expect((6...28).contains(failing.count), "\(failing.count) of 64 fail with a share of 0.25")
        for unit in units {
            #expect((unit.calibration.largestCorrectionDB > ProductionLine.correctionLimitDB) == unit.failsLimit)
        }
        #expect((0..<64).allSatisfy { !ProductionLine(seed: 3, failShare: 0).unit($0).failsLimit })
        #expect((0..<64).allSatisfy { ProductionLine(seed: 3, failShare: 1).unit($0).failsLimit })
    }

    @Test func identityWritesPersistInFlashAcrossPowerCycles() throws {
        var m = try DeviceMachine.blankUnit()
        let address = BDAddress(parsing: "00:1B:66:A1:B2:C3")!
        #expect(m.status(try FactorySettings.writeString("TS1-000042", .configSerialNumber)) == .ok)
        #expect(m.status(try FactorySettings.writeString("Tuneup TS1-42", .configBTDisplayName)) == .ok)
        #expect(m.status(try FactorySettings.bluetoothAddress.writeRequest(address)) == .ok)
        #expect(FactoryRecord.latest(in: m.flash)?.record.serialNumber == "TS1-000042", "the value is in flash")
        try m.powerCycleIntoBootloader()
        #expect(try Self.serial.decode(m.reply(Self.serial.readRequest()).buffer) == "TS1-000042")
        #expect(try Self.name.decode(m.reply(Self.name.readRequest()).buffer) == "Tuneup TS1-42")
        #expect(try m.decode(FactorySettings.bluetoothAddress, m.reply(FactorySettings.bluetoothAddress.readRequest())) == address)
        // The JSON settings were not the carrier: they still hold the classic factory serial.
        #expect(m.settings.identity.serialNumber == "TS1-000001")
    }

    /// A write whose flash program is cut by a power loss is not acknowledged, and after the reboot the unit has the
    /// old value: only what reached flash counts.
    @Test func aWriteTornByAPowerCutDoesNotPass() throws {
        // Flash operations: 1 the serial write; 2 the name write (cut).
        var m = try DeviceMachine.blankUnit(faults: FlashFaults(powerCutAt: [2], seed: 5))
        #expect(m.status(try FactorySettings.writeString("TS1-000042", .configSerialNumber)) == .ok)
        let step = m.handle(try FactorySettings.writeString("Torn Name", .configBTDisplayName), now: .now)
        #expect(step.replies.isEmpty && step.powerCut)
        m.powerOn(now: .now, delayed: false)
        #expect(try Self.name.decode(m.reply(Self.name.readRequest()).buffer) == "Tuneup Sim")
        #expect(try Self.serial.decode(m.reply(Self.serial.readRequest()).buffer) == "TS1-000042")
    }

    @Test func calibrationMeasuresStoresAndSurvivesReboot() throws {
        let line = ProductionLine(seed: 11)
        var m = try DeviceMachine.blankUnit(line, index: 5)
        #expect(m.status(FactorySettings.storeCalibration()) == .fail, "nothing measured yet")
        #expect(m.status(FactorySettings.startCalibration()) == .ok)
        let expected = line.unit(5).calibration
        #expect(try m.decode(FactorySettings.calibrationStatus, m.reply(FactorySettings.calibrationStatus.readRequest())) == .measured(expected))
        // Measured only: a power cycle loses it.
        try m.powerCycleIntoBootloader()
        #expect(try m.decode(FactorySettings.calibrationStatus, m.reply(FactorySettings.calibrationStatus.readRequest())) == .none)
        #expect(m.status(FactorySettings.startCalibration()) == .ok)
        #expect(m.status(FactorySettings.storeCalibration()) == .ok)
        try m.powerCycleIntoBootloader()
        #expect(try m.decode(FactorySettings.storedCalibration, m.reply(FactorySettings.storedCalibration.readRequest())) == expected)
        #expect(try m.decode(FactorySettings.calibrationStatus, m.reply(FactorySettings.calibrationStatus.readRequest())) == .stored(expected))
        #expect(expected != line.unit(6).calibration, "units differ")
    }

    @Test func writesNeedTheBootloaderAuthenticationAndAGoodArgument() throws {
        let line = ProductionLine(seed: 1)
        let config = DeviceConfiguration(index: 0, timing: .instant, queueDepth: 32, drainInterval: .zero, factory: line.unit(0))
        var m = DeviceMachine(config: config, flash: nil, settings: .factory(), randomSeed: 1, faults: .none, now: .now)
        m.powerOn(now: .now, delayed: false)
        #expect(m.state == .application)
        #expect(m.status(try FactorySettings.writeString("SN-1", .configSerialNumber)) == .notSupported, "application")
        #expect(m.status(FactorySettings.startCalibration()) == .notSupported)
        try m.enterBootloaderForTest()
        // A new challenge clears the authentication.
        _ = m.reply(BootRequests.authChallenge())
        #expect(m.status(try FactorySettings.writeString("SN-1", .configSerialNumber)) == .fail, "not authenticated")
        try m.authenticate()
        let tooLong = try Packet.request(.write, .configSerialNumber, argument: Array(String(repeating: "A", count: 31).utf8) + [0x41, 0])
        #expect(m.status(tooLong) == .fail)
        let noNul = try Packet.request(.write, .configSerialNumber, argument: Array("SN-1".utf8))
        #expect(m.status(noNul) == .fail)
        let space = try Packet.request(.write, .configSerialNumber, argument: Array("SN 1".utf8) + [0])
        #expect(m.status(space) == .exceededLimits)
        let shortAddress = try Packet.request(.write, .diagBDAddr, argument: [1, 2, 3])
        #expect(m.status(shortAddress) == .fail)
        #expect(FactoryRecord.latest(in: m.flash) == nil, "nothing was written")
    }

    @Test func lockRefusesFactoryCommandsUntilAnAuthenticatedUnlock() throws {
        var m = try DeviceMachine.blankUnit()
        #expect(m.status(try FactorySettings.writeString("TS1-000042", .configSerialNumber)) == .ok)
        #expect(m.status(try FactorySettings.lock.writeRequest(true)) == .ok)
        try m.powerCycleIntoBootloader()
        #expect(try m.decode(FactorySettings.lock, m.reply(FactorySettings.lock.readRequest())) == true)
        for request in [try FactorySettings.writeString("OTHER-1", .configSerialNumber),
                        try FactorySettings.writeString("Other", .configBTDisplayName),
                        try FactorySettings.bluetoothAddress.writeRequest(BDAddress(parsing: "00:00:00:00:00:01")!),
                        FactorySettings.startCalibration(), FactorySettings.calibrationStatus.readRequest(),
                        FactorySettings.storeCalibration(), try FactorySettings.lock.writeRequest(true)] {
            #expect(m.status(request) == .notSupported, "\(request.command) while locked")
        }
        // Reads still answer.
        #expect(try Self.serial.decode(m.reply(Self.serial.readRequest()).buffer) == "TS1-000042")
        #expect(m.status(FactorySettings.hardwareID.readRequest()) == .ok)
        // Unlock: a wrong key fails; without authentication the right key fails too.
        #expect(m.status(try FactorySettings.unlock.writeRequest(FactoryKey(bytes: [UInt8](repeating: 1, count: 16))!)) == .fail)
        _ = m.reply(BootRequests.authChallenge())
        #expect(m.status(try FactorySettings.unlock.writeRequest(.development)) == .fail)
        try m.authenticate()
        #expect(m.status(try FactorySettings.unlock.writeRequest(.development)) == .ok)
        try m.powerCycleIntoBootloader()
        #expect(try m.decode(FactorySettings.lock, m.reply(FactorySettings.lock.readRequest())) == false, "the unlock is in flash")
        #expect(m.status(try FactorySettings.writeString("TS1-000043", .configSerialNumber)) == .ok)
    }

    @Test func theRingWrapsWithoutLosingTheNewestRecord() throws {
        var m = try DeviceMachine.blankUnit()
        // Two sectors of 32 records: 100 writes go round the ring more than once.
        for k in 0..<100 {
            #expect(m.status(try FactorySettings.writeString("SN-\(k)", .configSerialNumber)) == .ok)
        }
        try m.powerCycleIntoBootloader()
        #expect(try Self.serial.decode(m.reply(Self.serial.readRequest()).buffer) == "SN-99")
    }

    /// The library's blank mode: a server of 64 units, each answering its own uid over its link.
    @Test func aServerOf64BlankUnitsHas64Uids() async throws {
        var blank = SimulatorOptions(drainInterval: .zero, timeScale: 0)
        blank.production = ProductionLine(seed: 64)
        let options = blank
        try await withTimeLimit {
            let server = try await SimulatorServer.start(count: 64, statePath: nil, options: options)
            var ids: [HardwareID] = []
            for device in server.devices {
                var host = TestHost(await device.connect())
                ids.append(try FactorySettings.hardwareID.decode(try await host.request(FactorySettings.hardwareID.readRequest()).buffer))
                await host.transport.close()
            }
            await server.shutdown()
            #expect(Set(ids).count == 64)
            #expect(ids == (0..<64).map { ProductionLine(seed: 64).unit($0).hardwareID })
        }
    }

    /// Through the actor and the state files: a written identity survives a shutdown (power cycle) and is read back
    /// by the next simulator on the same files; a classic device on the same path is unaffected by the options.
    @Test func identitySurvivesASimulatorRestart() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/line.json"
        var blank = SimulatorOptions(drainInterval: .zero, timeScale: 0)
        blank.production = ProductionLine(seed: 21)
        let options = blank
        try await withTimeLimit {
            let first = try await SimulatedHeadset(statePath: path, index: 0, options: options)
            var host = TestHost(await first.connect())
            try await host.authenticate()
            #expect(try await host.request(BootRequests.jumpToBootloader()).status == .ok)
            #expect(try await host.waitForImageType() == true)
            try await host.authenticate()
            #expect(try await host.request(try FactorySettings.writeString("LINE-0001", .configSerialNumber)).status == .ok)
            await first.shutdown()

            let second = try await SimulatedHeadset(statePath: path, index: 0, options: options)
            var again = TestHost(await second.connect())
            #expect(await second.runningImage == .application)
            let reply = try await again.request(Self.serial.readRequest())
            #expect(try Self.serial.decode(reply.buffer) == "LINE-0001")
            let id = try FactorySettings.hardwareID.decode(try await again.request(FactorySettings.hardwareID.readRequest()).buffer)
            #expect(id == ProductionLine(seed: 21).unit(0).hardwareID)
            await second.shutdown()
        }
    }
}
