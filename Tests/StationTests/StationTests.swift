import Foundation
import LightX
import Recipe
import Records
import HeadsetSimulator
import Station
import Synchronization
import TestSupport
import TuneupKit
import Testing

/// The station against blank simulated units: what it does to them and what it records.
@Suite struct StationTests {
    @Test func provisionsUnitsAtOnceAndRecordsEveryStep() async throws {
        let line = try await LineFixture.make(units: 3)
        defer { Task { await line.close() } }
        let events = EventLog()
        let results = try await withTimeLimit(120) { try await line.station(events: events).run(slots: line.slots) }

        #expect(results.map(\.outcome) == [.pass, .pass, .pass], "\(results)")
        #expect(Set(results.compactMap(\.serial)).count == 3)
        #expect(Set(results.compactMap(\.bluetoothAddress)).count == 3)
        for (k, result) in results.enumerated() {
            // The unit holds what the station says it gave it, locked.
            let info = try await line.info(k)
            #expect(info.hardwareID == result.hardwareID)
            #expect(info.serialNumber == result.serial)
            #expect(info.bluetoothAddress == result.bluetoothAddress)
            #expect(info.calibrationStatus == "stored")
            #expect(info.locked)
            #expect(result.stationSeconds >= 0 && result.stationSeconds <= result.seconds)

            // Recorded: one passing run with every step, identities committed.
            let hardwareID = try #require(result.hardwareID)
            let unit = try #require(try await line.store.unit(hardwareID))
            #expect(unit.runs.map(\.outcome) == [.pass])
            let run = try #require(try await line.store.run(unit.runs[0].id))
            #expect(run.steps.map(\.name) == LineFixture.expectedSteps(line.recipe.recipe))
            #expect(run.steps.allSatisfy { $0.outcome == .pass })
            #expect(run.start.recipeHash == line.recipe.contentHash)
            #expect(run.start.imageHashes.keys.sorted() == ["application", "resource"])
            let calibration = try #require(run.steps.first { $0.name == "calibrate-anc" })
            #expect(calibration.measurements.map(\.name) == ["anc-correction"])
            let live = unit.identities.filter { $0.state != .voided }
            #expect(Set(live.map(\.kind)) == [.serial, .bluetoothAddress])
            #expect(live.allSatisfy { $0.state == .committed })
            #expect(Set(live.map(\.value)) == [result.serial!, result.bluetoothAddress!])
        }
        #expect(events.stepsStarted.filter { $0 == "lock" }.count == 3)
    }

    @Test func aUnitThatComesBackKeepsItsIdentityAndSkipsWhatItHolds() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        let first = try await withTimeLimit(120) { try await line.station().run(slots: line.slots) }
        let again = try await withTimeLimit(120) { try await line.station().run(slots: line.slots) }
        #expect(first.map(\.outcome) == [.pass] && again.map(\.outcome) == [.pass])
        #expect(again[0].serial == first[0].serial)
        #expect(again[0].bluetoothAddress == first[0].bluetoothAddress)
        #expect(Set(again[0].skippedSteps) == ["flash-application", "flash-resource", "identity", "calibrate-anc", "lock"])
        let unit = try #require(try await line.store.unit(first[0].hardwareID!))
        #expect(unit.identities.count == 2, "no second identity: \(unit.identities)")
    }

    /// A name template that names every unit apart (the whole serial, the counter) gives a `bt-name` identity,
    /// committed with the others and kept when the unit comes back; one that repeats by design gives none.
    @Test func aNameThatNamesEveryUnitApartIsRecordedAsAnIdentity() async throws {
        let line = try await LineFixture.make(units: 2) {
            $0.replacingOccurrences(of: "bluetooth-name: \"Tuneup {serial[-4:]}\"", with: "bluetooth-name: \"Tuneup {serial}\"")
        }
        defer { Task { await line.close() } }
        #expect(line.recipe.recipe.identity.bluetoothName.text == "Tuneup {serial}", "test setup: the recipe's name")
        let first = try await withTimeLimit(120) { try await line.station().run(slots: line.slots) }
        #expect(first.map(\.outcome) == [.pass, .pass])
        for result in first {
            let hardwareID = try #require(result.hardwareID)
            let unit = try #require(try await line.store.unit(hardwareID))
            let names = unit.identities.filter { $0.kind == .bluetoothName }
            #expect(names.map(\.value) == ["Tuneup \(result.serial ?? "?")"], "\(unit.identities)")
            #expect(names.allSatisfy { $0.state == .committed })
            let k = try #require(line.slots.firstIndex { $0.name == result.slot })
            #expect(try await line.info(k).bluetoothName == names.first?.value)
        }
        let again = try await withTimeLimit(120) { try await line.station().run(slots: line.slots) }
        #expect(again.map(\.outcome) == [.pass, .pass])
        for result in again {
            let hardwareID = try #require(result.hardwareID)
            let unit = try #require(try await line.store.unit(hardwareID))
            #expect(unit.identities.filter { $0.kind == .bluetoothName }.count == 1, "no second name: \(unit.identities)")
        }
    }

    /// A passing re-run of a unit that passed before is a first pass, on the station as in `records report`: one
    /// definition (the unit's first finished run passed), counted over units. A unit that failed first is not.
    @Test func theFirstPassYieldIsTheRecordsReportsOnTheStation() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        let first = line.station()
        _ = try await withTimeLimit(120) { try await first.run(slots: line.slots) }
        #expect(first.totals.firstPassYield == 1 && first.totals.units == 1)
        let again = line.station()
        let results = try await withTimeLimit(120) { try await again.run(slots: line.slots) }
        #expect(results.map(\.outcome) == [.pass])
        let report = RecordsReport(runs: try await line.store.runsWithSteps())
        #expect(report.firstPassYield == 1)
        #expect(again.totals.firstPassYield == report.firstPassYield, "station \(String(describing: again.totals.firstPassYield))")
        #expect(again.totals.firstPassed == 1 && again.totals.units == 1 && again.totals.completed == 1)
    }

    @Test func aUnitOutsideTheCalibrationLimitFailsAndKeepsNoCalibration() async throws {
        let line = try await LineFixture.make(units: 1, failShare: 1)
        defer { Task { await line.close() } }
        let results = try await withTimeLimit(120) { try await line.station().run(slots: line.slots) }
        let result = try #require(results.first)
        #expect(result.outcome == .fail)
        #expect(result.failedStep == "calibrate-anc")
        #expect(result.message?.contains("outside") == true, "\(result.message ?? "")")
        let info = try await line.info(0)
        #expect(info.calibrationStatus != "stored")
        #expect(!info.locked)
        let unit = try #require(try await line.store.unit(result.hardwareID!))
        #expect(unit.runs.map(\.outcome) == [.fail])
        let run = try #require(try await line.store.run(unit.runs[0].id))
        #expect(run.steps.last?.name == "calibrate-anc" && run.steps.last?.outcome == .fail)
        #expect(run.steps.last?.measurements.first?.outcome == .fail)
        // Written to the unit, but not committed: a passing rework commits the same identity.
        #expect(unit.identities.allSatisfy { $0.state == .written })
    }

    @Test func anExhaustedIdentityPoolStopsTheStationAndIssuesNothingTwice() async throws {
        let line = try await LineFixture.make(units: 2) {
            $0.replacingOccurrences(of: "count: 65536", with: "count: 1")
        }
        defer { Task { await line.close() } }
        let station = line.station()
        let results = try await withTimeLimit(120) { try await station.run(slots: line.slots) }
        #expect(results.map(\.outcome).sorted { $0.rawValue < $1.rawValue } == [.error, .pass])
        let refused = try #require(results.first { $0.outcome == .error })
        #expect(refused.message?.contains("used up") == true, "\(refused.message ?? "")")
        #expect(station.stopReason?.contains("used up") == true)
        let identities = try await line.store.units().flatMap(\.identities).filter { $0.kind == .bluetoothAddress }
        #expect(identities.map(\.value) == ["02:54:55:00:00:00"])
    }

    /// A step record the records refuse (the run was ended under the station) ends the unit as an error, and the
    /// run's end is not recorded as a pass.
    @Test func aStepRecordTheRecordsRefuseEndsTheUnitAsAnError() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        let events = EventLog()
        let station = line.station(events: events)
        let task = Task { try await station.run(slots: line.slots) }
        try await waitUntil("the flash started", within: 60) { events.stepsStarted.contains("flash-application") }
        // The run is ended under the station: every step record from now on is refused.
        let ended = try await line.store.abortOpenRuns(station: "test-station", at: Date())
        #expect(ended.count == 1)
        let results = try await withTimeLimit(120) { try await task.value }
        let result = try #require(results.first)
        #expect(result.outcome == .error, "\(result)")
        #expect(result.message?.contains("records: ") == true, "\(result.message ?? "")")
        #expect(result.message?.contains("has ended") == true, "\(result.message ?? "")")
        // The first record refused names the step, though the unit went on while it was being written.
        #expect(result.failedStep == "flash-application", "\(result)")
        let hardwareID = try #require(result.hardwareID)
        let unit = try #require(try await line.store.unit(hardwareID))
        #expect(unit.runs.map(\.outcome) == [.aborted])
    }

    @Test func aStoppedStationRecordsTheRunAbortedAndTheUnitResumesWithItsIdentity() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        // Stop the station as the identity step starts (after the flash): the run is aborted.
        let events = EventLog()
        let station = line.station(events: events)
        let task = Task { try await station.run(slots: line.slots) }
        try await waitUntil("the identity step started", within: 60) { events.stepsStarted.contains("identity") }
        task.cancel()
        let stopped = try await withTimeLimit(60) { try await task.value }
        #expect(stopped.first?.outcome == .aborted, "\(stopped)")

        let resumed = try await withTimeLimit(120) { try await line.station().run(slots: line.slots) }
        #expect(resumed.first?.outcome == .pass)
        #expect(resumed.first?.serial == stopped.first?.serial)
        #expect(resumed.first?.skippedSteps.contains("flash-application") == true)
        let unit = try #require(try await line.store.unit(resumed[0].hardwareID!))
        #expect(unit.runs.map(\.outcome) == [.aborted, .pass])
        #expect(unit.identities.count == 2)
    }

    @Test func watchModeProvisionsUnitsAsTheyArriveAndWaitsForEachToLeave() async throws {
        // The line takes a unit out after 1.5 s without a request: longer than any pause of a run (the recipe's
        // retry delays are at most 0.5 s; flash and calibration are instant at time scale 0).
        var options = SimulatorOptions(timeScale: 0)
        options.production = ProductionLine(seed: 5)
        let simulated = try await SimulatedLine.start(.init(slots: 2, units: 5, dwell: .milliseconds(1500), gap: .milliseconds(500), simulator: options))
        let line = try await LineFixture.make(units: 1)
        defer { Task { await simulated.shutdown(); await line.close() } }
        let events = EventLog()
        let station = line.station(events: events, sessionTimeout: .seconds(2))
        let task = Task { try await station.watch(slots: simulated.endpoints.map { Slot(address: $0) }) }
        try await waitUntil("five units were provisioned", within: 120) { station.totals.completed == 5 }
        task.cancel()
        #expect(station.totals.passed == 5, "\(events.all.filter { if case .finished = $0 { return true } else { return false } })")
        try await withTimeLimit(60) { try await task.value }
        let units = try await line.store.units()
        #expect(units.count == 5)
        #expect(Set(units.flatMap(\.identities).filter { $0.kind == .serial }.map(\.value)).count == 5)
        let left = events.all.filter { if case .left = $0 { return true } else { return false } }.count
        #expect(left >= 3, "the slots saw units leave: \(left)")
    }

    /// A unit taken out 5 % into its flash: the station waits `deviceWait` (here 1 s) for it to come back, as in every
    /// other step, not the updater's own 30 s default.
    @Test func aUnitPulledWhileFlashingIsWaitedForAsLongAsTheStationSays() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        // A unit whose flash takes a while (5 % of real timing), so that it is pulled mid-flash.
        var simulated = SimulatorOptions(timeScale: 0.05)
        simulated.production = ProductionLine(seed: 3)
        let server = try await SimulatorServer.listenTCP(count: 1, statePath: nil, options: simulated)
        defer { Task { await server.shutdown() } }
        var connection = ConnectionOptions()
        connection.session.timeout = .seconds(30)
        let options = StationOptions(devices: .real, station: "pull", toolVersion: "test", connection: connection, deviceWait: .seconds(1))
        let pulled = Mutex(false)
        let station = Station(recipe: line.recipe, store: line.store, options: options) { event in
            guard case let .progress(_, _, "flash-application", fraction) = event, fraction >= 0.05 else { return }
            if pulled.withLock({ p in defer { p = true }; return !p }) { Task { await server.shutdown() } }
        }
        let results = try await withTimeLimit(120) { try await station.run(slots: server.endpoints.map { Slot(address: $0) }) }
        let result = try #require(results.first)
        #expect(pulled.withLock { $0 }, "the unit was pulled mid-flash")
        #expect(result.outcome == .error && result.failedStep == "flash-application", "\(result)")
        #expect(result.message?.contains("did not come back within 1 s") == true, "the wait of the station, not of the updater: \(result.message ?? "")")
    }

    @Test func aUnitSwappedMidRunIsNotGivenTheFirstOnesIdentity() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        guard case let .tcp(host, port) = try Devices.parseAddress(line.server.endpoints[0]) else { throw TestFailure("not TCP") }
        let events = EventLog()
        let station = line.station(events: events)
        let task = Task { try await station.run(slots: line.slots) }
        // The first unit is taken out as its settings step starts, and a unit of another lot is put in its place.
        try await waitUntil("the settings step started", within: 60) { events.stepsStarted.contains("settings") }
        await line.server.shutdown()
        var options = SimulatorOptions(timeScale: 0)
        options.production = ProductionLine(seed: 99)
        let other = try await SimulatorServer.listenTCP(host: host, port: port, count: 1, statePath: nil, options: options)
        defer { Task { await other.shutdown() } }
        let results = try await withTimeLimit(60) { try await task.value }
        let result = try #require(results.first)
        #expect(result.outcome == .error)
        #expect(result.message?.contains("another unit") == true, "\(result.message ?? "")")
        let client = Devices.bootloaderClient(address: try Devices.parseAddress(other.endpoints[0]), wait: .seconds(10))
        let info = try await FactorySteps(client: client).info()
        await client.close()
        #expect(info.serialNumber == nil && info.bluetoothAddress == nil, "the second unit got nothing: \(info)")
    }

    @Test func twoStationsOnOneSQLiteFileNeverIssueAnIdentityTwice() async throws {
        let line = try await LineFixture.make(units: 6)
        defer { Task { await line.close() } }
        let second = try await SQLiteRecordStore.open(path: line.directory + "/records.sqlite")
        let a = line.station(name: "station-a")
        let b = Station(recipe: line.recipe, store: second, options: StationOptions(devices: .real, station: "station-b", toolVersion: "test"))
        let slots = line.slots
        let results = try await withTimeLimit(120) {
            async let first = a.run(slots: Array(slots[0..<3]))
            async let other = b.run(slots: Array(slots[3..<6]))
            return try await first + other
        }
        #expect(results.allSatisfy { $0.outcome == .pass }, "\(results)")
        #expect(Set(results.compactMap(\.serial)).count == 6)
        #expect(Set(results.compactMap(\.bluetoothAddress)).count == 6)
        let stations = Set(try await line.store.runs().map(\.start.station))
        #expect(stations == ["station-a", "station-b"])
        Self.expectPaired(results, rules: line.recipe.identityGenerator.rules)
    }

    /// Two stations of a PostgreSQL line, 4 units each from leases of 8: every unit's serial is the one its address's
    /// place in the block makes (as on SQLite), and when the stations stop, every value is accounted for: issued to a
    /// unit or free again; nothing leased is left over, nothing voided that never reached a unit.
    @Test func aLineOnPostgreSQLPairsSerialsWithAddressesAndWastesNoIdentity() async throws {
        let pg = try await offThePool { try ThrowawayPostgres.shared() }
        let url = try await offThePool { try pg.createDatabase() }
        let server = try await PostgresRecordStore.open(url: url)
        let line = try await LineFixture.make(units: 8)
        defer { Task { await line.close(); await server.close() } }
        var stores: [OutboxRecordStore] = []
        var stations: [Station] = []
        for name in ["line-a", "line-b"] {
            let outbox = try await SQLiteRecordStore.open(path: "\(line.directory)/\(name).outbox.sqlite")
            let store = OutboxRecordStore(server: server, outbox: outbox, station: name, leaseSize: 8, serverWait: .seconds(10),
                                          retryInterval: .milliseconds(100))
            stores.append(store)
            stations.append(line.station(name: name, store: store))
        }
        let slots = line.slots, a = stations[0], b = stations[1]
        let results = try await withTimeLimit(300) {
            async let first = a.run(slots: Array(slots[0..<4]))
            async let other = b.run(slots: Array(slots[4..<8]))
            return try await first + other
        }
        #expect(results.allSatisfy { $0.outcome == .pass }, "\(results)")
        for store in stores {
            let left = await store.finish(within: .seconds(60))
            #expect(left.isEmpty && left.conflicts == 0, "\(store.station): \(left)")
        }
        Self.expectPaired(results, rules: line.recipe.identityGenerator.rules)

        let identities = try await server.units().flatMap(\.identities)
        #expect(identities.count == 16 && identities.allSatisfy { $0.state == .committed },
                "\(identities.map { "\($0.kind.rawValue) \($0.value) \($0.state.rawValue)" })")
        let database = String(url.split(separator: "/").last!.split(separator: "?").first!)
        let states = try await offThePool { try pg.psql(database, "SELECT state, COUNT(*) FROM identities GROUP BY state ORDER BY state") }
        #expect(states == "committed|16", "no value leased or voided without reaching a unit: \(states)")
    }

    /// Each unit's serial is the one the recipe makes from its address's place in the block.
    static func expectPaired(_ results: [UnitResult], rules: IdentityRules, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        for result in results {
            guard let serial = result.serial, let address = result.bluetoothAddress.flatMap(BDAddress.init(parsing:)) else {
                Issue.record("\(result.slot) has no identity", sourceLocation: sourceLocation)
                continue
            }
            let counter = rules.firstCounter + Int(address.value - rules.addressBlock.start.value)
            #expect(serial == (try? rules.serial.render(counter: counter, date: Date())), "address \(address) (counter \(counter)) got serial \(serial)",
                    sourceLocation: sourceLocation)
        }
    }
}
