import Foundation
import Synchronization
import Records
import TestSupport
import Testing

/// The stores a `RecordStore` behaviour test runs against.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// A SQLite file of the test's own.
    case sqlite
    /// A fresh database on the shared throwaway PostgreSQL server.
    case postgres
    /// A station's outbox (a SQLite file of the test's own) over a fresh database on the shared PostgreSQL server.
    case outbox

    var testDescription: String { rawValue }
}

/// One test's records: a fresh database (and outbox files) of `kind`, and the stores the test opens on it, closed at
/// the end (`withStores`).
final class StoreFixture: Sendable {
    let kind: StoreKind
    let directory: String
    /// The PostgreSQL database (postgres and outbox), nil for SQLite.
    let url: String?
    private let opened = Mutex<[any RecordStore]>([])

    init(_ kind: StoreKind) async throws {
        self.kind = kind
        let directory = try TestSupport.TemporaryDirectory.make("records-\(kind)")
        self.directory = directory
        if kind == .sqlite {
            url = nil
        } else {
            let pg = try await offThePool { try ThrowawayPostgres.shared() }
            url = try await offThePool { try pg.createDatabase() }
        }
    }

    /// A store of the station `station` (a second call with the same name: the station's process restarted, or a
    /// second instance of it): SQLite and PostgreSQL open the one database again; the outbox store opens the
    /// station's own outbox file over the one server.
    func open(station: String = "s1") async throws -> any RecordStore {
        let store: any RecordStore
        switch kind {
        case .sqlite:
            store = try await SQLiteRecordStore.open(path: "\(directory)/records.sqlite")
        case .postgres:
            store = try await PostgresRecordStore.open(url: url!)
        case .outbox:
            let server = try await PostgresRecordStore.open(url: url!)
            opened.withLock { $0.append(server) }
            let outbox = try await SQLiteRecordStore.open(path: "\(directory)/\(station).outbox.sqlite")
            store = OutboxRecordStore(server: server, outbox: outbox, station: station, leaseSize: 4, serverWait: .seconds(5),
                                      retryInterval: .milliseconds(50))
        }
        opened.withLock { $0.append(store) }
        return store
    }

    /// The line's view of every station's records: any store on the database; for outbox stations, the server once
    /// every outbox opened so far is uploaded (an outbox answers with its own station's records only, by design).
    func lineView() async throws -> any RecordStore {
        guard kind == .outbox else { return try await open() }
        let stations = opened.withLock { $0.compactMap { $0 as? OutboxRecordStore } }
        for station in stations {
            try await waitUntil("the outbox of \(station.station) is uploaded") { try await station.backlog().isEmpty }
        }
        let server = try await PostgresRecordStore.open(url: url!)
        opened.withLock { $0.append(server) }
        return server
    }

    func close() async {
        let stores = opened.withLock { stores in defer { stores = [] }; return stores }
        // Stations first (no upload from now on), then their servers.
        for case let station as OutboxRecordStore in stores { _ = await station.finish(within: .zero) }
        for case let server as PostgresRecordStore in stores { await server.close() }
        _ = try? await offThePool { [directory] in try FileManager.default.removeItem(atPath: directory) }
    }
}

/// Runs `body` with a fresh fixture of `kind`, closing what it opened whether `body` returns or throws.
func withStores(_ kind: StoreKind, _ body: (StoreFixture) async throws -> Void) async throws {
    let fixture = try await StoreFixture(kind)
    let result: Result<Void, any Error>
    do { result = .success(try await body(fixture)) } catch { result = .failure(error) }
    await fixture.close()
    try result.get()
}

/// Everything a `RecordStore` promises, against each store alike (a difference between stores is a bug).
/// Store-specific behaviour (SQLite files and locks, PostgreSQL URLs and outages, outbox uploads) is in
/// RecordStoreTests, PostgresRecordStoreTests and OutboxRecordStoreTests.
@Suite struct RecordStoreConformanceTests {
    @Test(arguments: StoreKind.allCases) func aReopenedStoreKeepsItsRecords(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            let store = try await stores.open()
            _ = try await store.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "1-1", startedAt: at(0)))
            let id = try await store.reserveIdentity(.serial, for: "uid-1", station: "s1", values: ["SN-1"])
            #expect(id.state == .reserved && id.value == "SN-1" && id.hardwareID == "uid-1")
            // Opening it again (the station restarted) migrates nothing and keeps the data.
            let again = try await stores.open()
            #expect(try await again.units().map(\.hardwareID) == ["uid-1"])
            #expect(try await again.identities(of: "uid-1").map(\.value) == ["SN-1"])
        }
    }

    @Test(arguments: StoreKind.allCases) func aUnitGetsBackTheIdentityItWasGiven(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            let store = try await stores.open()
            let first = try await store.reserveIdentity(.serial, for: "uid-1", station: "s1", candidates: serials)
            #expect(first.value == "SN00000" && first.state == .reserved)
            let again = try await store.reserveIdentity(.serial, for: "uid-1", station: "s1", values: ["OTHER"])
            #expect(again == first)
            // Written, then asked again from another store instance: still the same one.
            _ = try await store.markWritten(first.id)
            let other = try await stores.open()
            let fromOther = try await other.reserveIdentity(.serial, for: "uid-1", station: "s1", candidates: serials)
            #expect(fromOther.id == first.id && fromOther.state == .written)
            // From a lease too: the unit keeps its serial and the lease keeps its block (free values, in order).
            let lease = try await other.leaseBlock(.serial, count: 3, station: "s1", candidates: serials)
            let values = lease.identities.map(\.value)
            #expect(values.count == 3 && values == values.sorted() && !values.contains(first.value), "\(values)")
            #expect(lease.identities.allSatisfy { $0.hardwareID == nil && $0.lease == lease.id })
            let fromLease = try await other.reserveIdentity(.serial, for: "uid-1", fromLease: lease.id)
            #expect(fromLease.id == first.id)
            let taken = try await other.reserveIdentity(.serial, for: "uid-2", fromLease: lease.id)
            #expect(taken.value == values[0] && taken.lease == lease.id && taken.state == .reserved)
            // Another kind is a separate identity.
            let name = try await store.reserveIdentity(.bluetoothName, for: "uid-1", station: "s1", values: ["Tuneup 1"])
            #expect(name.kind == .bluetoothName && name.id != first.id)
            #expect(try await store.identities(of: "uid-1").count == 2)
            // The life of an identity: reserved → written → committed; a second commit changes nothing.
            let committed = try await store.commit(first.id)
            #expect(committed.state == .committed)
            #expect(try await other.commit(first.id) == committed)
            await #expect(throws: RecordsError(.invalidTransition, "")) { try await store.commit(name.id) }
        }
    }

    @Test(arguments: StoreKind.allCases) func aValueMadeFromAnotherIsReservedExactly(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            let store = try await stores.open()
            let serial = try await store.reserveIdentity(.serial, exactly: "SN-7", for: "uid-1", station: "s1")
            #expect(serial.value == "SN-7" && serial.hardwareID == "uid-1" && serial.state == .reserved)
            #expect(try await store.reserveIdentity(.serial, exactly: "SN-8", for: "uid-1", station: "s1") == serial)
        }
    }

    /// An address and the serial made from it: reserved together, and given back together to the unit that holds
    /// them. Where the records can (SQLite: one write), both or neither: a serial another unit holds leaves the address
    /// free.
    @Test(arguments: StoreKind.allCases) func anIdentityAndTheOneMadeFromItAreReservedAsAPair(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            let store = try await stores.open()
            let addresses: IdentityCandidates = { $0 < 4 ? "02:54:55:00:00:0\($0)" : nil }
            let made: @Sendable (Identity) throws -> String = { "SN-" + $0.value.suffix(2) }
            let (address, serial) = try await store.reserveIdentityPair(
                .bluetoothAddress, .serial, for: "uid-1", station: "s1", candidates: addresses, paired: made)
            #expect(address.value == "02:54:55:00:00:00" && serial.value == "SN-00", "\(address) \(serial)")
            #expect(address.hardwareID == "uid-1" && serial.hardwareID == "uid-1" && serial.state == .reserved)
            let again = try await store.reserveIdentityPair(
                .bluetoothAddress, .serial, for: "uid-1", station: "s1", candidates: addresses, paired: made)
            #expect(again.0 == address && again.1 == serial)
            // Another unit holds the serial the next free address makes.
            _ = try await store.reserveIdentity(.serial, exactly: "SN-01", for: "uid-x", station: "s1")
            await #expect(throws: RecordsError(.poolExhausted, "")) {
                _ = try await store.reserveIdentityPair(
                    .bluetoothAddress, .serial, for: "uid-2", station: "s1", candidates: addresses, paired: made)
            }
            if kind == .sqlite {
                #expect(try await store.identities(of: "uid-2").isEmpty, "both or neither")
                #expect(try await store.identities(of: "uid-x").map(\.value) == ["SN-01"])
            }
        }
    }

    @Test(arguments: StoreKind.allCases) func aVoidedValueIsNeverIssuedAgain(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            let store = try await stores.open()
            let first = try await store.reserveIdentity(.serial, for: "uid-1", station: "s1", values: ["SN1"])
            let voided = try await store.void(first.id)
            #expect(voided.state == .voided)
            // The unit gets a new serial, not the voided one; no other unit gets it either.
            let second = try await store.reserveIdentity(.serial, for: "uid-1", station: "s1", values: ["SN1", "SN2"])
            #expect(second.value == "SN2")
            await #expect(throws: RecordsError(.poolExhausted, "")) {
                _ = try await store.reserveIdentity(.serial, for: "uid-2", station: "s1", values: ["SN1"])
            }
            // The unused part of a lease is voided and never reissued, by the lease or by candidates.
            let lease = try await store.leaseBlock(.serial, count: 3, station: "s1", values: ["L1", "L2", "L3"])
            let fromLease = try await store.reserveIdentity(.serial, for: "uid-3", fromLease: lease.id)
            #expect(fromLease.value == "L1" && fromLease.lease == lease.id)
            let unused = try await store.voidUnused(lease: lease.id)
            #expect(unused.map(\.value) == ["L2", "L3"] && unused.allSatisfy { $0.state == .voided })
            await #expect(throws: RecordsError(.poolExhausted, "")) {
                _ = try await store.reserveIdentity(.serial, for: "uid-4", fromLease: lease.id)
            }
            await #expect(throws: RecordsError(.poolExhausted, "")) {
                _ = try await store.reserveIdentity(.serial, for: "uid-4", station: "s1", values: ["L2", "L3"])
            }
            await #expect(throws: RecordsError(.poolExhausted, "")) {
                _ = try await store.leaseBlock(.serial, count: 2, station: "s1", values: ["SN1", "L2", "L3"])
            }
            // A committed identity belongs to its unit for good.
            _ = try await store.markWritten(second.id)
            _ = try await store.commit(second.id)
            await #expect(throws: RecordsError(.invalidTransition, "")) { _ = try await store.void(second.id) }
        }
    }

    /// Stations racing for one value: it goes to exactly one unit; racing over shared candidates, every unit gets a
    /// value of its own.
    @Test(arguments: StoreKind.allCases) func stationsRacingNeverShareAValue(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            let stations = [try await stores.open(station: "s0"), try await stores.open(station: "s1")]
            let outcomes = try await withThrowingTaskGroup(of: (String, String?).self) { group in
                for i in 0..<8 {
                    let store = stations[i % 2]
                    group.addTask {
                        do {
                            let identity = try await store.reserveIdentity(.bluetoothName, for: "uid-\(i)", station: "s\(i % 2)", values: ["ONLY"])
                            return ("uid-\(i)", identity.value)
                        } catch let error as RecordsError where error.code == .poolExhausted {
                            return ("uid-\(i)", nil)
                        }
                    }
                }
                return try await group.reduce(into: [String: String?]()) { $0[$1.0] = $1.1 }
            }
            #expect(outcomes.count == 8)
            #expect(outcomes.values.compactMap { $0 } == ["ONLY"], "\(outcomes)")

            let issued = try await withThrowingTaskGroup(of: [Identity].self) { group in
                for (k, store) in stations.enumerated() {
                    group.addTask {
                        var mine: [Identity] = []
                        for unit in 0..<10 {
                            mine.append(try await store.reserveIdentity(.serial, for: "hw-\(k)-\(unit)", station: "s\(k)", candidates: serials))
                        }
                        return mine
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(issued.count == 20 && Set(issued.map(\.value)).count == 20 && Set(issued.compactMap(\.hardwareID)).count == 20)
            let line = try await stores.lineView()
            let live = try await line.units().flatMap(\.identities).filter { $0.kind == .serial && $0.state != .voided }
            #expect(live.count == 20 && Set(live.map(\.value)) == Set(issued.map(\.value)))
        }
    }

    @Test(arguments: StoreKind.allCases) func aRunIsRecordedWithStepsAndMeasurementsAndReadBack(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            let store = try await stores.open()
            let start = RunStart(
                hardwareID: "uid-7", station: "s1", slot: "usb:1-2.3", operatorName: "ana", recipeHash: "abc123",
                toolVersion: "1.4.0", imageHashes: ["application": "aa11", "resources": "bb22"], startedAt: at(0))
            let run = try await store.startRun(start)
            let flash = StepRecord(name: "flash", startedAt: at(10), endedAt: at(9_000), outcome: .pass, retries: 1, message: "2 sectors redone")
            let test = StepRecord(
                name: "mic-test", startedAt: at(9_001), endedAt: at(9_500), outcome: .pass,
                measurements: [
                    Records.Measurement(name: "mic-left", value: -38.25, unit: "dBFS", low: -42, high: -34, marginalLow: -41, marginalHigh: -35, outcome: .pass),
                    Records.Measurement(name: "noise", value: 0.5, unit: "%", high: 1, outcome: .pass),
                ])
            _ = try await store.recordStep(flash, in: run)
            let testID = try await store.recordStep(test, in: run)
            let late = Records.Measurement(name: "mic-right", value: -40.75, unit: "dBFS", low: -42, high: -34, marginalLow: -41, marginalHigh: -35, outcome: .marginal)
            try await store.recordMeasurement(late, in: testID)
            try await store.finishRun(run, outcome: .pass, at: at(10_000))

            // Read back by a fresh instance, as `tuneup records show` would.
            let reader = try await stores.open()
            let stored = try #require(try await reader.run(run))
            var expectedTest = test
            expectedTest.measurements.append(late)
            #expect(stored == RunRecord(id: run, start: start, endedAt: at(10_000), outcome: .pass, reworkCount: 0, steps: [flash, expectedTest]))
            #expect(try await reader.runs(hardwareID: nil, station: "s1").map(\.id) == [run])
            #expect(try await reader.runs(hardwareID: nil, station: "elsewhere").isEmpty)
            #expect(try await reader.runs(hardwareID: "uid-7", station: nil).map(\.outcome) == [.pass])
            let unit = try #require(try await reader.unit("uid-7"))
            #expect(unit.runs.map(\.outcome) == [.pass] && unit.firstSeen == at(0))
            #expect(try await reader.unit("uid-unknown") == nil)
            #expect(try await reader.run(RunID(9_999)) == nil)
            // A finished run takes no more records.
            await #expect(throws: RecordsError(.invalidTransition, "")) { try await store.finishRun(run, outcome: .fail, at: at(11_000)) }
            await #expect(throws: RecordsError(.invalidTransition, "")) { _ = try await store.recordStep(flash, in: run) }
            await #expect(throws: RecordsError(.notFound, "")) { _ = try await store.recordStep(flash, in: RunID(9_999)) }
        }
    }

    /// Every run a store lists for a unit, it reads back by that id.
    @Test(arguments: StoreKind.allCases) func theRunsAStoreListsAreReadBackByTheirIDs(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            // Another station's run first, so that the line's ids and a station's own ids differ.
            let other = try await stores.open(station: "s0")
            let first = try await other.startRun(RunStart(hardwareID: "uid-0", station: "s0", slot: "1", startedAt: at(0)))
            try await other.finishRun(first, outcome: .pass, at: at(1))
            _ = try await stores.lineView()
            let store = try await stores.open(station: "s1")
            let run = try await store.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "1", startedAt: at(2)))
            try await store.finishRun(run, outcome: .fail, at: at(3))
            _ = try await stores.lineView()
            let listed = try await store.runs(hardwareID: "uid-1", station: nil)
            #expect(listed.count == 1)
            for each in listed { #expect(try await store.run(each.id)?.start == each.start, "run \(each.id)") }
            // Another station's run of a unit (through an outbox: known from the server) reads back by the id listed too.
            let elsewhere = try await store.runs(hardwareID: "uid-0", station: nil)
            #expect(elsewhere.map(\.start.station) == ["s0"])
            for each in elsewhere { #expect(try await store.run(each.id)?.start == each.start, "run \(each.id) of s0") }
        }
    }

    @Test(arguments: StoreKind.allCases) func aStepIsRecordedWhole_orNotAtAll(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            let store = try await stores.open()
            let run = try await store.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "1", startedAt: at(0)))
            // The second measurement is not a number: the step and its first measurement must not stay behind.
            let broken = StepRecord(
                name: "calibrate", startedAt: at(1), endedAt: at(2), outcome: .pass,
                measurements: [Records.Measurement(name: "gain", value: 1, outcome: .pass), Records.Measurement(name: "bad", value: .nan, outcome: .fail)])
            let error = await #expect(throws: RecordsError.self) { _ = try await store.recordStep(broken, in: run) }
            #expect(error?.code == .storage && error?.message.contains("\n") == false, "\(String(describing: error))")
            #expect(try await store.run(run)?.steps.isEmpty == true)
        }
    }

    @Test(arguments: StoreKind.allCases) func timesAreKeptToTheMillisecond(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            let store = try await stores.open()
            let started = Date(timeIntervalSince1970: 1_790_000_000.123_4)
            let run = try await store.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "1", startedAt: started))
            let stored = try #require(try await store.run(run)?.start.startedAt)
            #expect(abs(stored.timeIntervalSince(started)) < 0.001, "\(stored) vs \(started)")
        }
    }

    @Test(arguments: StoreKind.allCases) func aRunOfAKilledStationIsRecordedAsAborted(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            let killed = try await stores.open()
            let run = try await killed.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "1", startedAt: at(0)))
            _ = try await killed.recordStep(StepRecord(name: "flash", startedAt: at(1), endedAt: at(2), outcome: .pass), in: run)

            // The station starts again: its open run is closed as aborted, with the steps it had.
            let restarted = try await stores.open()
            #expect(try await restarted.runs().map(\.outcome) == [nil])
            #expect(try await restarted.abortOpenRuns(station: "s1", at: at(100)) == [run])
            #expect(try await restarted.abortOpenRuns(station: "s1", at: at(200)).isEmpty)
            let aborted = try #require(try await restarted.run(run))
            #expect(aborted.outcome == .aborted && aborted.endedAt == at(100) && aborted.steps.map(\.name) == ["flash"])

            // A unit that comes back while its previous run is still open: that run is aborted, the new one counts.
            let second = try await restarted.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "4", startedAt: at(300)))
            let third = try await restarted.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "4", startedAt: at(400)))
            try await restarted.finishRun(third, outcome: .fail, at: at(500))
            let fourth = try await restarted.startRun(RunStart(hardwareID: "uid-1", station: "s1", slot: "4", startedAt: at(600)))
            let runs = try await restarted.runs(hardwareID: nil, station: "s1")
            #expect(runs.map(\.id) == [run, second, third, fourth])
            #expect(runs.map(\.outcome) == [.aborted, .aborted, .fail, nil])
            #expect(runs[1].endedAt == at(400))
            // Rework counts earlier failed runs, not aborted ones.
            #expect(runs.map(\.reworkCount) == [0, 0, 0, 1])
            #expect(try await restarted.unit("uid-1")?.runs.map(\.outcome) == [.aborted, .aborted, .fail, nil])
        }
    }

    /// Two stations record units at the same time: every run and every serial once, read back from the line.
    @Test(arguments: StoreKind.allCases) func twoStationsRecordAtOnce(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            let stations = [try await stores.open(station: "s0"), try await stores.open(station: "s1")]
            let perStation = 6
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (s, store) in stations.enumerated() {
                    for u in 0..<perStation {
                        group.addTask {
                            let hardwareID = "uid-\(s)-\(u)"
                            let run = try await store.startRun(RunStart(hardwareID: hardwareID, station: "s\(s)", slot: "\(u)", startedAt: at(Int64(u))))
                            let serial = try await store.reserveIdentity(.serial, for: hardwareID, station: "s\(s)", candidates: serials)
                            _ = try await store.markWritten(serial.id)
                            _ = try await store.commit(serial.id)
                            _ = try await store.recordStep(
                                StepRecord(name: "identity", startedAt: at(1), endedAt: at(2), outcome: .pass, message: serial.value), in: run)
                            try await store.finishRun(run, outcome: .pass, at: at(100))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let line = try await stores.lineView()
            let units = try await line.units()
            #expect(units.count == 2 * perStation)
            let values = units.flatMap(\.identities).filter { $0.state == .committed }.map(\.value)
            #expect(values.count == 2 * perStation && Set(values).count == values.count, "\(values)")
            let runs = try await line.runs()
            #expect(runs.count == 2 * perStation && runs.allSatisfy { $0.outcome == .pass })
        }
    }
}
