import Foundation
import Headset
import Support
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
        /// CPU time of one round of N probes at once (mean over the rounds): this process, and the simulator.
        var manyCPU: (probes: Double, simulator: Double)
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
        var cpu = (probes: 0.0, simulator: 0.0)
        let simulator = sim.pid
        let cpuNow = { @Sendable () async throws -> (Double, Double) in
            try await Blocking.perform("cpu") { (ProcessCPU.ofThisProcess(), ProcessCPU.ofLiveThreads(simulator)) }
        }
        for _ in 0..<rounds {
            one = min(one, try await timed { _ = try await probe(addresses[0]) })
            let before = try await cpuNow()
            many = min(many, try await timed {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for address in addresses { group.addTask { try await probe(address) } }
                    for try await _ in group {}
                }
            })
            let after = try await cpuNow()
            cpu.probes += (after.0 - before.0) / Double(rounds)
            cpu.simulator += (after.1 - before.1) / Double(rounds)
        }
        return Result(devices: devices, requestsPerProbe: requests, oneSeconds: one, manySeconds: many, maxThreads: sampler.stop(),
                      manyCPU: cpu)
    }

    /// Opens the headset, reads a full snapshot (what `tuneup probe` reads), closes; returns the request count.
    private func probe(_ address: DeviceAddress) async throws -> Int {
        // A perfect link ('none') is no conditioner at all: the figure is then the protocol stack's alone.
        let headset = try await Devices.openHeadset(address, options: ConnectionOptions(linkConditions: link == LinkConditions() ? nil : link))
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

    /// The thread count, field 20 of /proc/self/stat, read with one read(2) into a stack buffer: the sampler runs
    /// beside what it measures, so it must cost next to nothing (Foundation's file reading and string splitting
    /// every 2 ms were a visible share of the 64-probe run's CPU).
    static func threads() -> Int {
        let fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1024) { buffer -> Int in
            let n = read(fd, buffer.baseAddress, buffer.count)
            guard n > 0 else { return 0 }
            let bytes = UnsafeBufferPointer(rebasing: buffer[..<n])
            // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
            guard let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return 0 }
            var field = 2, value = 0, i = close + 1
            while i < n {
                if bytes[i] == UInt8(ascii: " ") {
                    field += 1
                    if field > 20 { break }
                } else if field == 20, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
                    value = value * 10 + Int(bytes[i] - UInt8(ascii: "0"))
                }
                i += 1
            }
            return value
        }
    }
}
