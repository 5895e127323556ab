import Failure

/// One phase of a job: a name, a weight relative to its siblings, and the phases nested in it (whose weights divide
/// its span among them). A provisioning station's job may hold, per unit, a "flash" phase that nests an update's own
/// phases (enter the bootloader, transfer, verify, commit, reboot).
public struct ProgressPhase: Sendable, Hashable {
    public var name: String
    /// Relative to the siblings' weights; negative or not-a-number weights count as 0.
    public var weight: Double
    public var children: [ProgressPhase]

    public init(_ name: String, weight: Double, _ children: [ProgressPhase] = []) {
        self.name = name
        self.weight = weight
        self.children = children
    }
}

/// Where a phase lies in the whole job: it starts at `start` (0...1) and covers `width` of it.
public struct ProgressSpan: Sendable, Hashable {
    public var start: Double
    public var width: Double

    public init(start: Double, width: Double) {
        self.start = start
        self.width = width
    }

    /// The overall fraction at `fraction` (clamped to 0...1) of this span.
    public func overall(at fraction: Double) -> Double {
        start + width * Swift.min(1, Swift.max(0, fraction.isNaN ? 0 : fraction))
    }
}

/// The position of a job in its weighted, nested phases, and its overall fraction, which never goes back: moving to
/// an earlier phase or a smaller fraction (a transfer that resumes after a reconnect, a sector redone) keeps the
/// fraction where it was. A value: no clock, no I/O.
public struct ProgressTracker: Sendable {
    /// The phases, as given.
    public let phases: [ProgressPhase]
    /// Completion of the whole job, 0...1; never decreases.
    public private(set) var overall = 0.0
    /// The phase last advanced in (its path of names), empty before the first.
    public private(set) var current: [String] = []
    /// The fraction of `current` last reported.
    public private(set) var phaseFraction = 0.0
    private let spans: [[String]: ProgressSpan]

    public init(_ phases: [ProgressPhase]) {
        self.phases = phases
        var spans: [[String]: ProgressSpan] = [:]
        func place(_ phases: [ProgressPhase], in parent: ProgressSpan, under path: [String]) {
            let weights = phases.map { $0.weight.isNaN ? 0 : Swift.max(0, $0.weight) }
            let total = weights.reduce(0, +)
            var before = 0.0
            for (phase, weight) in zip(phases, weights) {
                let key = path + [phase.name]
                // Fractions of the total first, so that sums of whole weights give exact starts and widths.
                let span = total > 0
                    ? ProgressSpan(start: parent.start + parent.width * (before / total), width: parent.width * (weight / total))
                    : ProgressSpan(start: parent.start, width: 0)
                before += weight
                guard spans[key] == nil else { continue }  // a repeated name: the first one counts
                spans[key] = span
                place(phase.children, in: span, under: key)
            }
        }
        place(phases, in: ProgressSpan(start: 0, width: 1), under: [])
        self.spans = spans
    }

    /// Where the phase at `path` (names from the top) lies, or nil when there is no such phase.
    public func span(of path: [String]) -> ProgressSpan? { spans[path] }

    /// Moves to `fraction` (0...1) of the phase at `path` and returns the overall fraction, which stays where it was
    /// if that would move it back. Throws `.unknownPhase` for a path that names no phase (nothing changes).
    @discardableResult
    public mutating func advance(_ path: [String], to fraction: Double = 0) throws(ProgressError) -> Double {
        guard let span = spans[path] else {
            throw ProgressError(.unknownPhase, "no progress phase \"\(path.joined(separator: "/"))\"; the phases are "
                                + spans.keys.map { $0.joined(separator: "/") }.sorted().joined(separator: ", "))
        }
        current = path
        phaseFraction = Swift.min(1, Swift.max(0, fraction.isNaN ? 0 : fraction))
        overall = Swift.max(overall, span.overall(at: phaseFraction))
        return overall
    }

    /// The job is done: the overall fraction becomes 1.
    public mutating func finish() {
        overall = 1
    }
}

/// A progress model used wrongly: a stable code and one line.
public struct ProgressError: CodedError, Hashable {
    public typealias Code = ErrorCodeIn<ProgressError>
    public var code: Code
    public var message: String
    public var category: FailureCategory { .usage }

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCodeIn where Domain == ProgressError {
    /// A path that names no phase of the job.
    public static var unknownPhase: Self { Self(rawValue: "unknown-phase") }
}
