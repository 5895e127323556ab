import Foundation
import Synchronization
import FirmwareUpdate
import Recipe
import Records
import HeadsetSimulator
import Station
import TestSupport
import TuneupKit

/// Blank simulated units on TCP (instant flash timing), a records file and the shipped recipe (adapted by `edit`)
/// in a temporary directory.
struct LineFixture: Sendable {
    let server: SimulatorServer
    let store: SQLiteRecordStore
    let recipe: LoadedRecipe
    let directory: String

    static func make(
        units: Int, failShare: Double = 0, seed: UInt64 = 1, edit: @escaping @Sendable (String) -> String = { $0 }
    ) async throws -> LineFixture {
        let directory = try TemporaryDirectory.make("station")
        let recipe = try await offThePool { try ProvisioningRecipe.load(path: try writeShippedRecipe(to: directory, edit: edit)) }
        var options = SimulatorOptions(timeScale: 0)
        options.production = ProductionLine(seed: seed, failShare: failShare)
        let server = try await SimulatorServer.listenTCP(count: units, statePath: nil, options: options)
        let store = try await SQLiteRecordStore.open(path: directory + "/records.sqlite")
        return LineFixture(server: server, store: store, recipe: recipe, directory: directory)
    }

    var slots: [Slot] { server.endpoints.map { Slot(address: $0) } }

    /// A station on this line; its events are kept in `events`. A simulated unit on the line answers every request:
    /// the long default session timeout keeps a loaded machine's delays from failing a run. The real-time tests,
    /// where units leave the line, use a short one.
    func station(name: String = "test-station", store: (any RecordStore)? = nil, events: EventLog = EventLog(),
                 sessionTimeout: Duration = .seconds(30)) -> Station {
        var connection = ConnectionOptions()
        connection.session.timeout = sessionTimeout
        return Station(recipe: recipe, store: store ?? self.store, options: StationOptions(devices: .real, station: name, toolVersion: "test", connection: connection,
                                                                              deviceWait: .seconds(10), pollInterval: .milliseconds(50))) {
            events.append($0)
        }
    }

    /// The factory state of the unit in slot `k`, read by a client of its own.
    func info(_ k: Int) async throws -> FactoryInfo {
        let client = Devices.bootloaderClient(address: try Devices.parseAddress(server.endpoints[k]), wait: .seconds(10))
        defer { Task { await client.close() } }
        return try await FactorySteps(client: client).info()
    }

    func close() async {
        await server.shutdown()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The events a station reported, in order.
final class EventLog: Sendable {
    private let events = Mutex<[StationEvent]>([])
    func append(_ event: StationEvent) { events.withLock { $0.append(event) } }
    var all: [StationEvent] { events.withLock { $0 } }
    var stepsStarted: [String] {
        all.compactMap { if case let .stepStarted(_, _, step) = $0 { return step } else { return nil } }
    }
}

extension LineFixture {
    /// The steps a full run of `recipe` records, in order.
    static func expectedSteps(_ recipe: ProvisioningRecipe) -> [String] {
        var steps = ["flash-application"]
        if recipe.images.resource != nil { steps.append("flash-resource") }
        steps += ["settings", "identity", "calibrate-anc"]
        steps += recipe.tests.map { "test:\($0.name)" }
        if recipe.lock { steps.append("lock") }
        return steps
    }
}
