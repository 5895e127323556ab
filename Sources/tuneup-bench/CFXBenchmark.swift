import CFX
import CFXPublisher
import Foundation
import Recipe
import Records
import Station
import Support
import Synchronization
import ThrowawayRabbitMQ
import TuneupKit

/// IPC-CFX through a broker outage: N blank simulated units provisioned at once with the CFX publisher on, a
/// throwaway RabbitMQ stopped `outageAfter` seconds into the run for `outage` seconds, then started again; every message
/// the records call for is received by a consumer (tools/cfx-consume.py) and counted by UniqueID.
struct CFXBenchmark {
    struct Result {
        var units = 0
        var passed = 0
        var expected = 0
        var received = 0
        var distinct = 0
        var lost = 0
        var duplicates = 0
        var stationSeconds = 0.0
        var stationDoneDuringOutage = false
        var backlogAtRestart = 0
        var outageSeconds = 0.0
        var brokerStartSeconds = 0.0
        /// From the broker's restart to an empty spool.
        var drainSeconds = 0.0
        /// Units finished before the broker was down.
        var unitsBeforeStop = 0
    }

    var tuneup: String
    var recipe: LoadedRecipe
    var units: Int
    var timeScale: Double
    var outage: Double
    var outageAfter: Double

    func run() async throws -> Result {
        var r = Result(units: units)
        let broker = try await Blocking.perform("broker") { try ThrowawayRabbitMQ.shared() }
        let queue = broker.newQueue()
        let sim = try SimulatorProcess(tuneup: tuneup, count: units, extra: ["--blank", "--time-scale", "\(timeScale)"])
        defer { sim.quit() }
        let directory = NSTemporaryDirectory() + "tuneup-bench-cfx-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try await SQLiteRecordStore.open(path: directory + "/records.sqlite")
        let publisher = try await CFXPublisher.start(
            CFXOptions(broker: try AMQPAddress(parsing: broker.url(queue)), spool: directory + "/spool",
                       handle: CFXMapper.handle(station: "bench"), reconnectDelay: .milliseconds(500)),
            store: store, notice: { print("  \($0)") })
        let finishedBeforeStop = Mutex<(stopped: Bool, units: Int)>((false, 0))
        let station = Station(recipe: recipe, store: store, options: StationOptions(devices: Devices.registry, station: "bench", toolVersion: "bench")) { event in
            publisher.handle(event)
            if case .finished = event { finishedBeforeStop.withLock { if !$0.stopped { $0.units += 1 } } }
        }
        let start = ContinuousClock.now
        // The broker stops `outageAfter` seconds into the run, while units are being provisioned.
        let paused: Task<ContinuousClock.Instant, any Error>? = outage > 0 ? Task {
            try await Task.sleep(until: start + .seconds(outageAfter))
            try await Blocking.perform("broker") { try broker.pause() }
            finishedBeforeStop.withLock { $0.stopped = true }
            return ContinuousClock.now
        } : nil
        let results = try await station.run(slots: sim.addresses.map { Slot(address: $0) })
        let stationDone = ContinuousClock.now
        r.stationSeconds = (stationDone - start) / .seconds(1)
        r.passed = results.filter { $0.outcome == .pass }.count
        if let task = paused {
            let stopped = try await task.value
            r.unitsBeforeStop = finishedBeforeStop.withLock { $0.units }
            r.stationDoneDuringOutage = stationDone < stopped + .seconds(outage)
            try await Task.sleep(until: stopped + .seconds(outage))
            r.backlogAtRestart = publisher.status.waiting
            // The broker starts (rabbitmqctl waits for it to be fully up) while the spool is watched: the sender
            // connects as soon as the broker listens, which is before that wait ends.
            let restart = ContinuousClock.now
            let starting = Task { try await Blocking.perform("broker") { try broker.resume() }; return ContinuousClock.now }
            let left = await publisher.drained(within: .seconds(600))
            let empty = ContinuousClock.now
            let up = try await starting.value
            r.outageSeconds = (up - stopped) / .seconds(1)
            r.brokerStartSeconds = (up - restart) / .seconds(1)
            r.drainSeconds = (empty - restart) / .seconds(1)
            if left > 0 { throw BenchError("\(left) messages still in the spool 600 s after the broker came back") }
        } else {
            _ = await publisher.drained(within: .seconds(600))
        }
        await publisher.close()

        // What the records call for, and what arrived.
        let mapper = CFXMapper(source: CFXMapper.handle(station: "bench"))
        var expected = Set<String>()
        for run in try await store.runs(hardwareID: nil, station: "bench") {
            guard let full = try await store.run(run.id) else { continue }
            let identities = try await store.identities(of: run.start.hardwareID)
            expected.formUnion(mapper.messages(for: CFXUnitRun(run: full, identities: identities)).map(\.uniqueID))
        }
        r.expected = expected.count
        let total = expected.count
        let received = try await Blocking.perform("broker") {
            try consumeAMQP(url: "amqp://127.0.0.1:\(broker.port)", address: queue, expect: total, timeout: 300)
        }
        let depth = try await Blocking.perform("broker") { try broker.queueDepth(queue) }
        let distinct = Set(received.map(\.id))
        r.received = received.count + depth.ready + depth.unacknowledged
        r.distinct = distinct.intersection(expected).count
        r.lost = expected.subtracting(distinct).count
        r.duplicates = r.received - distinct.count
        return r
    }
}
