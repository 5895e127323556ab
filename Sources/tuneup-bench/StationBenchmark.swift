import CFX
import CFXPublisher
import Foundation
import Recipe
import Records
import Station
import Support
import StationPage
import ThrowawayRabbitMQ
import TuneupKit

/// Provisions blank simulated units with the station (flash, settings, identity, calibration, tests, lock): N at
/// once against one alone, each on a fresh `tuneup sim headset --blank` process and a fresh SQLite records file, and
/// the station's own share of each unit's wall time.
struct StationBenchmark {
    struct Phase {
        var units: Int
        var seconds: Double
        var passed: Int
        var shareMean: Double
        var shareMax: Double
        /// With the page on: the messages its WebSocket client received.
        var pageMessages = 0
        /// With CFX on: the messages the broker accepted.
        var cfxAccepted = 0
    }

    var tuneup: String
    var recipe: LoadedRecipe
    var units: Int
    var timeScale: Double
    var page = false
    /// With CFX on: a throwaway RabbitMQ, the publisher following the station's events (its spool, its sender).
    var cfx = false

    func run() async throws -> (one: Phase, many: Phase) {
        let one = try await phase(units: 1)
        let many = try await phase(units: units)
        return (one, many)
    }

    private func phase(units: Int) async throws -> Phase {
        let sim = try SimulatorProcess(tuneup: tuneup, count: units, extra: ["--blank", "--time-scale", "\(timeScale)"])
        defer { sim.quit() }
        let directory = NSTemporaryDirectory() + "tuneup-bench-station-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try await SQLiteRecordStore.open(path: directory + "/records.sqlite")
        let page = self.page ? try await PageProbe.start(store: store) : nil
        var publisher: CFXPublisher?
        if cfx {
            let broker = try await Blocking.perform("broker") { try ThrowawayRabbitMQ.shared() }
            publisher = try await CFXPublisher.start(
                CFXOptions(broker: try AMQPAddress(parsing: broker.url(broker.newQueue())), spool: directory + "/cfx-spool",
                           handle: CFXMapper.handle(station: "bench")), store: store)
        }
        let cfxPublisher = publisher
        let station = Station(recipe: recipe, store: store, options: StationOptions(devices: Devices.registry, station: "bench", toolVersion: "bench")) { event in
            page?.feed.handle(event)
            cfxPublisher?.handle(event)
        }
        let start = ContinuousClock.now
        let results = try await station.run(slots: sim.addresses.map { Slot(address: $0) })
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        let messages = await page?.stop() ?? 0
        var accepted = 0
        if let cfxPublisher {
            let left = await cfxPublisher.drained(within: .seconds(120))
            await cfxPublisher.close()
            accepted = cfxPublisher.status.accepted
            if left > 0 { throw BenchError("cfx: \(left) messages not accepted by the broker") }
        }
        guard let failed = results.first(where: { $0.outcome != .pass }) else {
            let shares = results.map { $0.stationSeconds / $0.seconds }
            return Phase(units: units, seconds: seconds, passed: results.count, shareMean: shares.reduce(0, +) / Double(shares.count),
                         shareMax: shares.max() ?? 0, pageMessages: messages, cfxAccepted: accepted)
        }
        throw BenchError("unit in \(failed.slot) did not pass: \(failed.outcome.rawValue) at \(failed.failedStep ?? "?"): \(failed.message ?? "")")
    }
}
