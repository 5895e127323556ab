import Foundation
import Headset
import Synchronization
import Transport
import TuneupKit

/// Probes many simulated headsets at once from one process: one `tuneup sim headset --count N` server on TCP, N
/// concurrent sessions each reading a full snapshot, against probing one of them alone. The process's thread count
/// is sampled all along (from /proc/self/status) on a thread of its own.
struct ManyBenchmark {
    struct Result {
        var devices: Int
        var requestsPerProbe: Int
        var oneSeconds: Double
        var manySeconds: Double
        var maxThreads: Int
        var ratio: Double { manySeconds / oneSeconds }
    }

    var tuneup: String
    var devices: Int
    var rounds: Int
    /// Link conditions between this process and each headset (e.g. `latency=2ms`: a USB-like 4 ms round trip).
    var link: LinkConditions

    func run() async throws -> Result {
        let sim = try SimulatorProcess(tuneup: tuneup, count: devices)
        defer { sim.quit() }
        let addresses = try sim.addresses.map { try Devices.parseAddress($0) }

        // Warm up every connection path once, and count a probe's requests.
        let requests = try await probe(addresses[0])
        var one = Double.infinity, many = Double.infinity
        let sampler = ThreadSampler()
        for _ in 0..<rounds {
            one = min(one, try await timed { _ = try await probe(addresses[0]) })
            many = min(many, try await timed {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for address in addresses { group.addTask { try await probe(address) } }
                    for try await _ in group {}
                }
            })
        }
        return Result(devices: devices, requestsPerProbe: requests, oneSeconds: one, manySeconds: many, maxThreads: sampler.stop())
    }

    /// Opens the headset, reads a full snapshot (what `tuneup probe` reads), closes; returns the request count.
    private func probe(_ address: DeviceAddress) async throws -> Int {
        let headset = try await Devices.openHeadset(address, options: ConnectionOptions(linkConditions: link))
        do {
            _ = try await headset.snapshot()
            let requests = await headset.session.statistics.requests
            await headset.close()
            return requests
        } catch {
            await headset.close()
            throw error
        }
    }

    private func timed(_ body: () async throws -> Void) async throws -> Double {
        let start = ContinuousClock.now
        try await body()
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }
}

/// Samples the process's thread count every 2 ms on a dedicated thread until `stop()`; returns the maximum.
final class ThreadSampler: Sendable {
    private let state = Mutex((stop: false, max: 0, done: false))

    init() {
        let thread = Thread { [self] in
            while !state.withLock({ $0.stop }) {
                let n = Self.threads()
                state.withLock { $0.max = Swift.max($0.max, n) }
                usleep(2000)
            }
            state.withLock { $0.done = true }
        }
        thread.start()
    }

    func stop() -> Int {
        state.withLock { $0.stop = true }
        while !state.withLock({ $0.done }) { usleep(1000) }
        return state.withLock { $0.max }
    }

    /// "Threads:" of /proc/self/status.
    static func threads() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") }) else { return 0 }
        return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
    }
}
