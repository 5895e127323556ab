import Foundation
import Synchronization
import Transport

/// The steps of an update, in order.
public enum UpdatePhase: String, Sendable, Hashable, Codable, CaseIterable {
    case connect, authenticate
    case enterBootloader = "enter-bootloader"
    case erase, write, verify, commit, reboot, confirm
    /// The link was lost; reopening it (the update then continues where it was). Does not move the fraction.
    case reconnect
    case done

    /// Where the phase starts and how much of the whole it weighs (erase and write share the transfer span).
    var span: (start: Double, width: Double) {
        switch self {
        case .connect: return (0.00, 0.02)
        case .authenticate: return (0.02, 0.02)
        case .enterBootloader: return (0.04, 0.06)
        case .erase, .write: return (0.10, 0.80)
        case .verify: return (0.90, 0.04)
        case .commit: return (0.94, 0.02)
        case .reboot: return (0.96, 0.03)
        case .confirm: return (0.99, 0.01)
        case .reconnect: return (0.00, 0.00)
        case .done: return (1.00, 0.00)
        }
    }
}

/// One progress event. `fraction` never goes backwards within an update.
public struct UpdateProgress: Sendable, Hashable, Codable {
    public var phase: UpdatePhase
    /// Overall completion, 0...1.
    public var fraction: Double
    /// Image bytes on the device: acknowledged writes, and what it held already when the update (re)started.
    /// Never more than `bytesTotal`.
    public var bytesWritten: Int
    /// Image bytes to program (all blocks that are not all 0xFF), the same for the whole update.
    public var bytesTotal: Int
    public var sectorsErased: Int
    public var sectorsTotal: Int
    /// Acknowledged write rate since the transfer began.
    public var bytesPerSecond: Double?
    /// Estimated seconds to the end of the transfer.
    public var etaSeconds: Double?
    public var elapsedSeconds: Double
    /// Requests allowed in flight now (pipelined transfers).
    public var window: Int?
    /// What is happening, for people.
    public var message: String?
}

/// Collects progress, keeps the fraction monotonic, and hands events to the stream and an optional observer.
final class ProgressReporter: Sendable {
    private struct State {
        var current: UpdateProgress
        var transferStart: ContinuousClock.Instant?
        /// Bytes already on the device when the transfer started (not counted in the rate).
        var bytesAtStart = 0
        var lastEmit: ContinuousClock.Instant?
        /// The events sent so far (the newest 1024), replayed to consumers that subscribe later.
        var sent: [UpdateProgress] = []
    }

    private let state: Mutex<State>
    private let start = ContinuousClock.now
    private let broadcast = Broadcast<UpdateProgress>()

    init() {
        state = Mutex(State(current: UpdateProgress(
            phase: .connect, fraction: 0, bytesWritten: 0, bytesTotal: 0, sectorsErased: 0, sectorsTotal: 0,
            bytesPerSecond: nil, etaSeconds: nil, elapsedSeconds: 0, window: nil, message: nil)))
    }

    /// Enters `phase` (at `phaseFraction` of it).
    func phase(_ phase: UpdatePhase, _ phaseFraction: Double = 0, message: String? = nil) {
        emit(force: true) { p in
            p.phase = phase
            p.message = message
            p.fraction = Swift.max(p.fraction, phase.span.start + phase.span.width * Swift.min(1, Swift.max(0, phaseFraction)))
        }
    }

    /// Sets up the transfer totals (the whole image's), `done` bytes being on the device already; the rate counts
    /// from the first call of the update.
    func beginTransfer(bytes: Int, sectors: Int, done: Int, window: Int) {
        state.withLock { s in
            if s.transferStart == nil {
                s.transferStart = .now
                s.bytesAtStart = done
            }
            s.current.bytesTotal = bytes
            s.current.sectorsTotal = sectors
            s.current.bytesWritten = done
            s.current.window = window
        }
    }

    /// Transfer progress: work done as a fraction of the transfer, plus counters. Events are rate-limited.
    func transfer(phase: UpdatePhase, bytesWritten: Int, sectorsErased: Int, workFraction: Double, window: Int) {
        emit(force: false) { p in
            p.phase = phase
            p.message = nil
            p.bytesWritten = bytesWritten
            p.sectorsErased = sectorsErased
            p.window = window
            p.fraction = Swift.max(p.fraction, phase.span.start + phase.span.width * Swift.min(1, Swift.max(0, workFraction)))
        }
    }

    /// A new consumer: the events sent so far (the newest 1024), then every later one; it ends with the update.
    /// Up to 1024 undelivered events are kept per consumer (the newest).
    func subscribe() -> AsyncStream<UpdateProgress> {
        state.withLock { s in broadcast.subscribe(bufferingPolicy: .bufferingNewest(1024), replay: s.sent) }
    }

    /// Ends every consumer's stream after a final event.
    func finish(done: Bool) {
        if done { phase(.done) }
        state.withLock { _ in broadcast.finish() }
    }

    /// The latest event.
    var current: UpdateProgress { state.withLock { $0.current } }

    private func emit(force: Bool, _ change: (inout UpdateProgress) -> Void) {
        state.withLock { s in
            let previousPhase = s.current.phase
            change(&s.current)
            let now = ContinuousClock.now
            s.current.elapsedSeconds = (now - start).seconds
            if let t0 = s.transferStart {
                let elapsed = (now - t0).seconds
                if elapsed > 0.05, s.current.bytesWritten > s.bytesAtStart {
                    let rate = Double(s.current.bytesWritten - s.bytesAtStart) / elapsed
                    s.current.bytesPerSecond = rate
                    let span = UpdatePhase.write.span
                    let done = Swift.max(0.001, (s.current.fraction - span.start) / span.width)
                    s.current.etaSeconds = done < 1 ? elapsed * (1 - done) / done : 0
                }
            }
            // At most 20 transfer events a second; phase changes always go out.
            if !force, s.current.phase == previousPhase, let last = s.lastEmit, now - last < .milliseconds(50) { return }
            s.lastEmit = now
            s.sent.append(s.current)
            if s.sent.count > 1024 { s.sent.removeFirst(s.sent.count - 1024) }
            // Sent under the lock: every consumer sees the events in one order, and a new one starts at the latest.
            broadcast.yield(s.current)
        }
    }
}

extension Duration {
    /// This duration in seconds.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
