import Foundation
import Progress
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

    /// The phase's place in `UpdatePhase.tree`: erase and write share the transfer; nil for `reconnect` (which
    /// does not move the fraction) and `done` (the end).
    var path: [String]? {
        switch self {
        case .erase, .write: return ["transfer"]
        case .reconnect, .done: return nil
        default: return [rawValue]
        }
    }

    /// The weighted phases of an update, in percent of the whole. A job that nests an update (a station flashing
    /// many units) can nest these under its own phase.
    public static let tree: [ProgressPhase] = [
        ProgressPhase("connect", weight: 2), ProgressPhase("authenticate", weight: 2),
        ProgressPhase("enter-bootloader", weight: 6), ProgressPhase("transfer", weight: 80),
        ProgressPhase("verify", weight: 4), ProgressPhase("commit", weight: 2), ProgressPhase("reboot", weight: 3),
        ProgressPhase("confirm", weight: 1),
    ]
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

/// Collects progress: the update's place in its weighted phases (`ProgressTracker`, so the fraction never goes
/// back), the transfer's counters and rate, and hands events to any number of consumers (`ProgressFeed`).
final class ProgressReporter: Sendable {
    private struct State {
        var current: UpdateProgress
        var tracker = ProgressTracker(UpdatePhase.tree)
        var transferStart: ContinuousClock.Instant?
        /// Bytes already on the device when the transfer started (not counted in the rate).
        var bytesAtStart = 0
        var lastEmit: ContinuousClock.Instant?

        /// Moves the tracker to `fraction` of `phase` and takes its overall fraction.
        mutating func advance(_ phase: UpdatePhase, _ fraction: Double) {
            if let path = phase.path {
                current.fraction = (try? tracker.advance(path, to: fraction)) ?? tracker.overall
            } else if phase == .done {
                tracker.finish()
                current.fraction = tracker.overall
            }
        }
    }

    private let state: Mutex<State>
    private let start = ContinuousClock.now
    private let feed = ProgressFeed<UpdateProgress>(replayLimit: 1024)

    init() {
        state = Mutex(State(current: UpdateProgress(
            phase: .connect, fraction: 0, bytesWritten: 0, bytesTotal: 0, sectorsErased: 0, sectorsTotal: 0,
            bytesPerSecond: nil, etaSeconds: nil, elapsedSeconds: 0, window: nil, message: nil)))
    }

    /// Enters `phase` (at `phaseFraction` of it).
    func phase(_ phase: UpdatePhase, _ phaseFraction: Double = 0, message: String? = nil) {
        emit(force: true) { s in
            s.current.phase = phase
            s.current.message = message
            s.advance(phase, phaseFraction)
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

    /// The transfer (re)starts as `machine` has it. Progress counts the whole image: what the device holds already
    /// is done.
    func beginTransfer(_ machine: TransferMachine) {
        beginTransfer(bytes: machine.bytesTotal, sectors: machine.sectorsTotal, done: machine.bytesDone, window: machine.window.size)
    }

    /// Transfer progress: work done as a fraction of the transfer, plus counters. Events are rate-limited.
    func transfer(phase: UpdatePhase, bytesWritten: Int, sectorsErased: Int, workFraction: Double, window: Int) {
        emit(force: false) { s in
            s.current.phase = phase
            s.current.message = nil
            s.current.bytesWritten = bytesWritten
            s.current.sectorsErased = sectorsErased
            s.current.window = window
            s.advance(phase, workFraction)
        }
    }

    /// The transfer's progress as `machine` has it.
    func transfer(_ machine: TransferMachine) {
        transfer(phase: machine.anyWriteDone ? .write : .erase, bytesWritten: machine.bytesDone,
                 sectorsErased: machine.state.sectorsErased, workFraction: machine.workFraction, window: machine.window.size)
    }

    /// A new consumer: the events sent so far (the newest 1024), then every later one; it ends with the update.
    /// Up to 1024 undelivered events are kept per consumer (the newest).
    func subscribe() -> AsyncStream<UpdateProgress> { feed.subscribe() }

    /// Ends every consumer's stream after a final event.
    func finish(done: Bool) {
        if done { phase(.done) }
        feed.finish()
    }

    /// The latest event.
    var current: UpdateProgress { state.withLock { $0.current } }

    private func emit(force: Bool, _ change: (inout State) -> Void) {
        state.withLock { s in
            let previousPhase = s.current.phase
            change(&s)
            let now = ContinuousClock.now
            s.current.elapsedSeconds = (now - start).seconds
            if let t0 = s.transferStart, let span = s.tracker.span(of: ["transfer"]) {
                let elapsed = (now - t0).seconds
                if elapsed > 0.05, s.current.bytesWritten > s.bytesAtStart {
                    let rate = Double(s.current.bytesWritten - s.bytesAtStart) / elapsed
                    s.current.bytesPerSecond = rate
                    let done = Swift.max(0.001, (s.current.fraction - span.start) / span.width)
                    s.current.etaSeconds = done < 1 ? elapsed * (1 - done) / done : 0
                }
            }
            // At most 20 transfer events a second; phase changes always go out.
            if !force, s.current.phase == previousPhase, let last = s.lastEmit, now - last < .milliseconds(50) { return }
            s.lastEmit = now
            feed.publish(s.current)
        }
    }
}

extension Duration {
    /// This duration in seconds.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
