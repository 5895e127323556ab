import Foundation
import Records
import TestSupport
import Testing

/// A station's outbox on a line's PostgreSQL server: leases, local records, uploads exactly once, a server that goes
/// away and comes back.
@Suite struct OutboxRecordStoreTests {
    static let candidates: IdentityCandidates = { $0 < 10_000 ? String(format: "SN-%05d", $0) : nil }

    static func directory() throws -> String {
        try TestSupport.TemporaryDirectory.make("outbox")
    }

    /// A station's store: its outbox file in `directory`, uploads retried every 50 ms.
    /// `serverWait`: 5 s where the test needs the server's answer (the whole suite runs at once on two cores), short
    /// where the server is down.
    static func station(_ name: String, server: PostgresRecordStore, directory: String, leaseSize: Int = 4,
                        serverWait: Duration = .seconds(5)) async throws -> OutboxRecordStore {
        let outbox = try await SQLiteRecordStore.open(path: "\(directory)/\(name).outbox.sqlite")
        return OutboxRecordStore(
            server: server, outbox: outbox, station: name, leaseSize: leaseSize, serverWait: serverWait,
            retryInterval: .milliseconds(50))
    }

    /// One whole run of a unit: identity reserved, run recorded, written, committed, run passed.
    static func provision(_ hardwareID: String, on store: OutboxRecordStore) async throws -> Identity {
        let identity = try await store.reserveIdentity(.serial, for: hardwareID, station: store.station, candidates: candidates)
        let run = try await store.startRun(RunStart(hardwareID: hardwareID, station: store.station, slot: "slot-1"))
        _ = try await store.recordStep(
            StepRecord(name: "identity", startedAt: Date(), endedAt: Date(), outcome: .pass,
                       measurements: [Records.Measurement(name: "m", value: 1, unit: "V", low: 0, high: 2, outcome: .pass)]),
            in: run)
        _ = try await store.markWritten(identity.id)
        _ = try await store.commit(identity.id)
        try await store.finishRun(run, outcome: .pass, at: Date())
        return identity
    }

    @Test func recordsReachTheServerOnceWithIdentitiesFromTheLease() async throws {
        let pg = try await offThePool { try ThrowawayPostgres.shared() }
        let url = try await offThePool { try pg.createDatabase() }
        let server = try await PostgresRecordStore.open(url: url)
        let directory = try Self.directory()
        let store = try await Self.station("s1", server: server, directory: directory)
        var given: [String] = []
        for unit in 0..<6 { given.append(try await Self.provision("hw-\(unit)", on: store).value) }
        try await waitUntil("the outbox is uploaded") { try await store.backlog().isEmpty }

        let units = try await server.units()
        #expect(units.count == 6)
        for unit in units {
            #expect(unit.runs.map(\.outcome) == [.pass], "every run once: \(unit.runs)")
            let live = unit.identities.filter { $0.state != .voided }
            #expect(live.map(\.state) == [.committed])
        }
        let onServer = units.flatMap(\.identities).map(\.value)
        #expect(Set(onServer) == Set(given) && onServer.count == 6)
        let run = try #require(try await server.run(units[0].runs[0].id))
        #expect(run.steps.map(\.name) == ["identity"] && run.steps[0].measurements.map(\.name) == ["m"])

        // Six values out of leases of four: two leases, two values unused until the station finishes, then free again.
        let left = await store.finish(within: .seconds(10))
        #expect(left.isEmpty)
        let database = String(url.split(separator: "/").last!.split(separator: "?").first!)
        let leased = try await offThePool { try pg.psql(database, "SELECT state, COUNT(*) FROM identities GROUP BY state ORDER BY state") }
        #expect(leased == "committed|6", "unused leased values go back to the pool, never voided: \(leased)")
        await server.close()
    }

    /// A station's units carry the line's releases, all units' read in one query (an export through the outbox, not one
    /// query per unit): the same as each unit's own, on many units released never, once or twice.
    @Test func aStationsUnitsCarryTheLinesReleasesOfEveryUnit() async throws {
        let pg = try await offThePool { try ThrowawayPostgres.shared() }
        let url = try await offThePool { try pg.createDatabase() }
        let server = try await PostgresRecordStore.open(url: url)
        let store = try await Self.station("s1", server: server, directory: try Self.directory())
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        for unit in 0..<30 {
            let hardwareID = "hw-\(unit)"
            for attempt in 0...(unit % 3) {
                let at = start + Double(unit * 10 + attempt)
                let run = try await store.startRun(RunStart(hardwareID: hardwareID, station: "s1", slot: "1", startedAt: at))
                guard attempt < unit % 3 else {
                    try await store.finishRun(run, outcome: .pass, at: at + 0.5)
                    break
                }
                try await store.finishRun(run, outcome: .fail, at: at + 0.5)
                _ = try await store.release(hardwareID, by: "bob", reason: "attempt \(attempt)", at: at + 0.75)
            }
        }
        let units = try await store.units()
        #expect(units.map(\.hardwareID).sorted() == (0..<30).map { "hw-\($0)" }.sorted())
        for unit in units {
            let own = try await server.releases(of: unit.hardwareID)
            #expect(unit.releases == own, "\(unit.hardwareID)")
            #expect(own.count == Int(unit.hardwareID.dropFirst(3))! % 3, "\(unit.hardwareID): \(own)")
        }
        let some = try await server.releases(ofUnits: ["hw-2", "hw-1", "hw-3", "no-such-unit"])
        #expect(some == ["hw-1": try await server.releases(of: "hw-1"), "hw-2": try await server.releases(of: "hw-2")])
        await server.close()
    }

    @Test func aStationKeepsProvisioningWhileTheServerIsDownAndUploadsWhenItReturns() async throws {
        try await withDedicatedPostgres { pg in
            let url = try await offThePool { try pg.createDatabase() }
            let server = try await PostgresRecordStore.open(url: url)
            let directory = try Self.directory()
            let stations = [try await Self.station("a", server: server, directory: directory, leaseSize: 8),
                            try await Self.station("b", server: server, directory: directory, leaseSize: 8)]
            // Each station holds a lease before the server goes away.
            for (k, store) in stations.enumerated() { _ = try await Self.provision("hw-\(k)-0", on: store) }

            try await offThePool { try pg.pause() }
            var given: [String] = []
            for unit in 1..<5 {
                for (k, store) in stations.enumerated() { given.append(try await Self.provision("hw-\(k)-\(unit)", on: store).value) }
            }
            for store in stations {
                let backlog = try await store.backlog()
                #expect(backlog.runs >= 4, "runs wait in the outbox while the server is down: \(backlog)")
                #expect(store.serverProblem != nil)
            }

            try await offThePool { try pg.start() }
            for store in stations {
                try await waitUntil("the outbox of \(store.station) is uploaded", within: 60) { try await store.backlog().isEmpty }
            }
            let units = try await server.units()
            #expect(units.count == 10)
            #expect(units.allSatisfy { $0.runs.map(\.outcome) == [.pass] }, "nothing lost, nothing twice")
            let live = units.flatMap(\.identities).filter { $0.state != .voided }
            #expect(live.count == 10 && Set(live.map(\.value)).count == 10 && live.allSatisfy { $0.state == .committed })
            #expect(Set(given).isSubset(of: Set(live.map(\.value))))
            for store in stations { #expect(await store.finish(within: .seconds(10)).isEmpty) }
            await server.close()
        }
    }

    @Test func aUnitTheServerKnowsKeepsItsIdentityAtAnotherStation() async throws {
        let pg = try await offThePool { try ThrowawayPostgres.shared() }
        let server = try await PostgresRecordStore.open(url: try await offThePool { try pg.createDatabase() })
        let directory = try Self.directory()
        let a = try await Self.station("a", server: server, directory: directory)
        let b = try await Self.station("b", server: server, directory: directory)
        let first = try await a.reserveIdentity(.serial, for: "hw-1", station: "a", candidates: Self.candidates)
        try await waitUntil("the reservation is uploaded") { try await a.backlog().isEmpty }
        let again = try await b.reserveIdentity(.serial, for: "hw-1", station: "b", candidates: Self.candidates)
        #expect(again.value == first.value, "the unit keeps what it was given")
        let other = try await b.reserveIdentity(.serial, for: "hw-2", station: "b", candidates: Self.candidates)
        #expect(other.value != first.value)
        _ = await a.finish(within: .seconds(10))
        _ = await b.finish(within: .seconds(10))
        await server.close()
    }

    /// A station killed with records in its outbox: its next start uploads them, once.
    @Test func aRestartedStationUploadsWhatItsKilledProcessLeft() async throws {
        try await withDedicatedPostgres { pg in
            let url = try await offThePool { try pg.createDatabase() }
            let server = try await PostgresRecordStore.open(url: url)
            let directory = try Self.directory()
            do {
                let killed = try await Self.station("s", server: server, directory: directory)
                _ = try await Self.provision("hw-warm", on: killed)
                try await waitUntil("the first run is uploaded") { try await killed.backlog().isEmpty }
                try await offThePool { try pg.pause() }
                _ = try await Self.provision("hw-1", on: killed)
                _ = try await killed.startRun(RunStart(hardwareID: "hw-2", station: "s", slot: "slot-1"))
                #expect(try await killed.backlog().runs == 1)
            }  // dropped without finish: the process died
            try await offThePool { try pg.start() }
            let restarted = try await Self.station("s", server: server, directory: directory)
            #expect(try await restarted.abortOpenRuns(station: "s", at: Date()).count == 1)
            try await waitUntil("the outbox is uploaded", within: 60) { try await restarted.backlog().isEmpty }
            #expect(try await server.runs(hardwareID: "hw-1", station: nil).map(\.outcome) == [.pass])
            #expect(try await server.runs(hardwareID: "hw-2", station: nil).map(\.outcome) == [.aborted])
            #expect(try await server.runs().count == 3)
            _ = await restarted.finish(within: .seconds(10))
            await server.close()
        }
    }

    @Test func importingARunTwiceRecordsItOnce() async throws {
        let pg = try await offThePool { try ThrowawayPostgres.shared() }
        let server = try await PostgresRecordStore.open(url: try await offThePool { try pg.createDatabase() })
        let start = RunStart(hardwareID: "hw-1", station: "s", slot: "x", startedAt: Date(timeIntervalSince1970: 1_800_000_000))
        let run = RunRecord(id: RunID(7), start: start, endedAt: start.startedAt + 5, outcome: .fail, reworkCount: 0,
                            steps: [StepRecord(name: "lock", startedAt: start.startedAt, endedAt: start.startedAt + 1, outcome: .fail)])
        let first = try await server.importRun(run, origin: "s/hw-1/1")
        let second = try await server.importRun(run, origin: "s/hw-1/1")
        #expect(first == second)
        #expect(try await server.runs().count == 1)
        var open = run
        open.outcome = nil
        open.endedAt = nil
        let refused = await #expect(throws: RecordsError.self) { _ = try await server.importRun(open, origin: "s/hw-1/2") }
        #expect(refused?.code == .invalidArgument)
        await server.close()
    }

    @Test func theServerRefusesAnIdentityAnotherStationOrUnitHolds() async throws {
        let pg = try await offThePool { try ThrowawayPostgres.shared() }
        let server = try await PostgresRecordStore.open(url: try await offThePool { try pg.createDatabase() })
        let lease = try await server.leaseBlock(.serial, count: 2, station: "a", candidates: Self.candidates)
        let value = lease.identities[0].value
        let other = await #expect(throws: RecordsError.self) {
            try await server.applyIdentity(.serial, value: value, hardwareID: "hw-1", state: .reserved, station: "b")
        }
        #expect(other?.code == .conflict, "leased to another station")
        try await server.applyIdentity(.serial, value: value, hardwareID: "hw-1", state: .written, station: "a")
        try await server.applyIdentity(.serial, value: value, hardwareID: "hw-1", state: .reserved, station: "a")
        #expect(try await server.identities(of: "hw-1").map(\.state) == [.written], "never back")
        let held = await #expect(throws: RecordsError.self) {
            try await server.applyIdentity(.serial, value: value, hardwareID: "hw-2", state: .committed, station: "a")
        }
        #expect(held?.code == .conflict, "another unit holds it")
        try await server.applyIdentity(.serial, value: lease.identities[1].value, hardwareID: nil, state: .voided, station: "a")
        let voided = await #expect(throws: RecordsError.self) {
            try await server.applyIdentity(.serial, value: lease.identities[1].value, hardwareID: "hw-3", state: .reserved, station: "a")
        }
        #expect(voided?.code == .conflict, "a voided value is never issued again")
        await server.close()
    }
}
