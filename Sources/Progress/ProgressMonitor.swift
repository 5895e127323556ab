import Synchronization

/// Where a job stands: the phase (path of names), how far into it, the overall fraction, and a line for people.
public struct ProgressSnapshot: Sendable, Hashable, Codable {
    public var phase: [String]
    public var phaseFraction: Double
    /// 0...1, never decreasing within a job.
    public var overall: Double
    public var message: String?
    public var finished: Bool

    public init(phase: [String], phaseFraction: Double, overall: Double, message: String? = nil, finished: Bool = false) {
        self.phase = phase
        self.phaseFraction = phaseFraction
        self.overall = overall
        self.message = message
        self.finished = finished
    }
}

/// A job's progress for any number of consumers: a `ProgressTracker` over its phases whose every move is published
/// as a `ProgressSnapshot` through a `ProgressFeed`. Thread-safe. A nested job (one unit's firmware update within a
/// station's run) reports into its phase with `advance(path, to: itsOverallFraction)`.
public final class ProgressMonitor: Sendable {
    private let tracker: Mutex<ProgressTracker>
    private let feed: ProgressFeed<ProgressSnapshot>

    public init(_ phases: [ProgressPhase], replayLimit: Int = 1024) {
        tracker = Mutex(ProgressTracker(phases))
        feed = ProgressFeed(replayLimit: replayLimit)
    }

    /// Moves to `fraction` of the phase at `path` and publishes where the job stands. Throws `.unknownPhase` (and
    /// publishes nothing) for a path that names no phase.
    public func advance(_ path: [String], to fraction: Double = 0, message: String? = nil) throws(ProgressError) {
        try tracker.withLock { (t: inout ProgressTracker) throws(ProgressError) in
            try t.advance(path, to: fraction)
            let snapshot = ProgressSnapshot(phase: t.current, phaseFraction: t.phaseFraction, overall: t.overall, message: message)
            feed.publish(snapshot)
        }
    }

    /// Publishes the end (overall 1) and ends every consumer's stream.
    public func finish(message: String? = nil) {
        tracker.withLock { t in
            t.finish()
            feed.publish(ProgressSnapshot(phase: t.current, phaseFraction: 1, overall: 1, message: message, finished: true))
        }
        feed.finish()
    }

    /// A new consumer: the snapshots published so far, then every later one, until `finish()`.
    public func subscribe() -> AsyncStream<ProgressSnapshot> { feed.subscribe() }

    /// The overall fraction now.
    public var overall: Double { tracker.withLock { $0.overall } }
}
