import Foundation
import Logging
import Simulator
import Synchronization
import Transport

/// A simulated production line for a station in watch mode: fixture slots at fixed TCP addresses where units fresh
/// from assembly arrive one after another. A unit is "plugged in" when its slot's address starts answering, and
/// "taken out" (the address stops answering) once the host has left it alone for `dwell` after using it, as an
/// operator takes a unit out when the station is done with it; the slot takes the next unit after `gap`. A station
/// sees a unit leave by polling its slot without talking to it, so `gap` must be several of its poll intervals: a
/// slot empty for less than one poll looks to it like the old unit still sitting there, and the new one is never
/// provisioned (nor, as nobody uses it, taken out).
///
/// Unit `i` of the line is `ProductionLine.unit(i)` (its hardware id and spread), so a line run is reproducible.
public final class SimulatedLine: Sendable {
    public struct Options: Sendable {
        /// Fixture slots, 1...64.
        public var slots: Int
        /// Units in all, handed to the slots in order (slot k's first unit is unit k).
        public var units: Int
        public var host: String
        /// Slot k listens on `port + k`; 0 picks a free port for each slot (kept for its later units).
        public var port: UInt16
        /// A unit is taken out when the host has sent it nothing for this long (after its first request).
        public var dwell: Duration
        /// Time between taking a unit out and the next one arriving in the slot.
        public var gap: Duration
        /// The units' simulation; `production` must be set (the line's seed, fail share and key).
        public var simulator: SimulatorOptions

        public init(slots: Int = 1, units: Int = 1, host: String = "127.0.0.1", port: UInt16 = 0, dwell: Duration = .seconds(2),
                    gap: Duration = .seconds(1), simulator: SimulatorOptions) {
            self.slots = slots
            self.units = units
            self.host = host
            self.port = port
            self.dwell = dwell
            self.gap = gap
            self.simulator = simulator
        }
    }

    /// What happened on the line.
    public enum Event: Sendable, Hashable {
        case arrived(slot: Int, unit: Int, address: String)
        case left(slot: Int, unit: Int)
        /// Every unit has come and gone.
        case done
    }

    /// The slots' addresses (`tcp:HOST:PORT`), slot 0 first.
    public let endpoints: [String]
    /// The line's events, for one consumer.
    public let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let task = Mutex<Task<Void, Never>?>(nil)
    /// The next unit to arrive in a slot that empties.
    private let nextUnit: Mutex<Int>

    private init(endpoints: [String]) {
        self.endpoints = endpoints
        nextUnit = Mutex(endpoints.count)
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
    }

    /// Binds every slot's port (so the addresses are known and stay the same), then runs the line in the background.
    /// Throws `SimulatorError(.invalidArgument)` for bad counts, `TransportError` when a port is taken.
    public static func start(_ options: Options) async throws -> SimulatedLine {
        guard (1...SimulatorServer.maxDevices).contains(options.slots) else {
            throw SimulatorError(.invalidArgument, "a line has 1...\(SimulatorServer.maxDevices) slots, not \(options.slots)")
        }
        guard options.units >= 1 else { throw SimulatorError(.invalidArgument, "a line needs at least one unit") }
        guard options.simulator.production != nil else {
            throw SimulatorError(.invalidArgument, "a line's units are blank units: set the simulator's production line")
        }
        if options.port != 0, Int(options.port) + options.slots - 1 > Int(UInt16.max) {
            throw SimulatorError(.invalidArgument, "ports \(options.port)...\(Int(options.port) + options.slots - 1) do not fit below 65536")
        }
        // The first unit of each slot is there from the start, on a port that the slot keeps.
        var first: [TCPListener] = []
        do {
            for k in 0..<min(options.slots, options.units) {
                first.append(try await TCPListener.bind(host: options.host, port: options.port == 0 ? 0 : options.port + UInt16(k), logger: options.simulator.logger))
            }
        } catch {
            first.forEach { $0.close() }
            throw error
        }
        let line = SimulatedLine(endpoints: first.map(\.boundAddress.description))
        let listeners = first
        line.task.withLock {
            $0 = Task {
                await withTaskGroup(of: Void.self) { group in
                    for (k, listener) in listeners.enumerated() {
                        group.addTask { await line.runSlot(k, first: listener, unit: k, options: options) }
                    }
                }
                line.continuation.yield(.done)
                line.continuation.finish()
            }
        }
        return line
    }

    /// Stops the line: units in the slots are taken out, nothing more arrives.
    public func shutdown() async {
        let task = self.task.withLock { $0 }
        task?.cancel()
        await task?.value
    }

    private func runSlot(_ k: Int, first: TCPListener, unit firstUnit: Int, options: Options) async {
        guard case let .tcp(host, port) = first.boundAddress else { return }
        var listener: TCPListener? = first
        var unit = firstUnit
        while !Task.isCancelled {
            do {
                let bound: TCPListener
                if let listener { bound = listener } else { bound = try await TCPListener.bind(host: host, port: port, logger: options.simulator.logger) }
                listener = nil
                let headset = SimulatedHeadset(sharedStore: nil, index: unit, options: options.simulator)
                let server = try SimulatorServer(devices: [headset], logger: options.simulator.logger)
                try server.attach(bound, toDevice: 0)
                continuation.yield(.arrived(slot: k, unit: unit, address: bound.boundAddress.description))
                await waitUntilDone(headset, dwell: options.dwell)
                await server.shutdown()
                continuation.yield(.left(slot: k, unit: unit))
            } catch {
                options.simulator.logger?.error("slot \(k): \(error)")
                return
            }
            let taken: Int? = nextUnit.withLock { n in
                guard n < options.units else { return nil }
                defer { n += 1 }
                return n
            }
            guard let taken else { return }
            unit = taken
            do { try await Task.sleep(for: options.gap) } catch { return }
        }
    }

    /// Returns when the unit has answered requests and then heard nothing for `dwell`, or when cancelled.
    private func waitUntilDone(_ headset: SimulatedHeadset, dwell: Duration) async {
        var last = 0
        var quietSince = ContinuousClock.now
        while !Task.isCancelled {
            let answered = await headset.answeredRequests
            let now = ContinuousClock.now
            if answered != last {
                last = answered
                quietSince = now
            } else if answered > 0, now - quietSince >= dwell {
                return
            }
            do { try await Task.sleep(for: .milliseconds(50)) } catch { return }
        }
    }
}
