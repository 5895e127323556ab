/// A speaker's lost-packet recovery for one stream (docs/speaker-protocol.md §7.1), a pure value on an injected clock:
/// which sequence numbers are missing, when to ask the controller for them (`resendRequest`), and when to give up.
///
/// - A packet whose sequence number jumps ahead of the highest seen opens a gap: every number skipped is missing. Each
///   gets a deadline — the time its first frame is due, estimated back from the packet that revealed the gap (packets
///   of a stream are full but the last, so missing packet s is due `(sequence − s) × packetDuration` before it) —
///   minus `margin`, the time a retransmission needs to be useful.
/// - A missing packet is asked for `reorderGrace` after its gap was seen (a reordered packet may still fill it), then
///   again every `retryInterval` while it is missing, until its deadline: then it is given up (`expired`). Numbers
///   whose deadline is already past when the gap is seen (a speaker joining mid-stream) are not tracked at all; nor
///   are more than `window` numbers back — the controller's retransmit buffer holds no more.
/// - A missing packet that arrives is `recovered`. Duplicates and reordered packets change nothing else.
///
/// All times are on one clock (the speaker's DAC clock), nanoseconds.
public struct LossRecovery: Sendable, Hashable {
    public struct Policy: Sendable, Hashable {
        /// Wait this long after a gap is seen before asking (a packet overtaken on the way may still come).
        public var reorderGrace: UInt64
        /// Ask again this long after a request when the packet is still missing (the request or its answer was lost).
        public var retryInterval: UInt64
        /// Give up on a packet this long before its first frame is due: an answer later than that is of no use.
        public var margin: UInt64
        /// Track at most this many sequence numbers back from the highest seen.
        public var window: UInt32
        /// At most this many numbers per request (`ResendRequest.maxSequences`).
        public var maxPerRequest: Int

        public init(reorderGrace: UInt64 = 2_000_000, retryInterval: UInt64 = 25_000_000, margin: UInt64 = 5_000_000,
                    window: UInt32 = 512, maxPerRequest: Int = ResendRequest.maxSequences) {
            self.reorderGrace = reorderGrace
            self.retryInterval = retryInterval
            self.margin = margin
            self.window = max(1, window)
            self.maxPerRequest = max(1, min(ResendRequest.maxSequences, maxPerRequest))
        }
    }

    /// What recovery counted.
    public struct Statistics: Sendable, Hashable {
        /// Sequence numbers seen missing (and tracked).
        public var missing: UInt64 = 0
        /// Sequence numbers asked for (every ask counts, repeats too).
        public var asked: UInt64 = 0
        /// Missing packets that arrived after all (a retransmission, or late).
        public var recovered: UInt64 = 0
        /// Missing packets given up at their deadline (they play as silence).
        public var expired: UInt64 = 0
        /// Gaps too old to be useful when seen (past their deadline, or beyond the window): never asked for.
        public var untracked: UInt64 = 0

        public init() {}

        public mutating func add(_ other: Statistics) {
            missing += other.missing
            asked += other.asked
            recovered += other.recovered
            expired += other.expired
            untracked += other.untracked
        }
    }

    private struct Missing: Sendable, Hashable {
        var deadline: UInt64
        var nextAsk: UInt64
    }

    public let policy: Policy
    public private(set) var statistics = Statistics()
    private var highest: UInt32?
    /// No packet seen yet since the stream started (not since a `reset`): the first expected is number 0.
    private var fresh = true
    private var missing: [UInt32: Missing] = [:]

    public init(policy: Policy = Policy()) { self.policy = policy }

    /// The sequence numbers missing now, in order from the oldest.
    public var missingSequences: [UInt32] {
        guard let highest else { return [] }
        return missing.keys.sorted { (highest &- $0) > (highest &- $1) }
    }

    /// The earliest time something is to be done (an ask or a give-up); nil when nothing is missing.
    public var nextEvent: UInt64? {
        missing.values.map { min($0.nextAsk, $0.deadline) }.min()
    }

    /// A packet arrived at `now`: `sequence`, its first frame due at `due` (nil: not known yet, no map — the gap it
    /// reveals is not tracked), and one packet's duration. True when it was missing (a recovery).
    @discardableResult
    public mutating func received(sequence: UInt32, due: UInt64?, packetDuration: UInt64, at now: UInt64) -> Bool {
        if missing.removeValue(forKey: sequence) != nil {
            statistics.recovered += 1
            return true
        }
        guard let h = highest else {
            highest = sequence
            // A stream's packets are numbered from 0: a speaker that has the stream from its start (not from a resume)
            // counts the numbers before its first packet as a gap, so a lost first packet is asked for too. (One that
            // joins mid-stream finds them past their deadlines: not tracked, and not counted, as they were not its to get.)
            if fresh, sequence > 0, sequence < 1 << 31 {
                track(skipped: sequence, before: sequence, due: due, packetDuration: packetDuration, at: now, counting: false)
            }
            fresh = false
            return false
        }
        let ahead = sequence &- h
        guard ahead != 0, ahead < 1 << 31 else { return false }  // a duplicate, or an older packet that was not missing
        highest = sequence
        guard ahead > 1 else { return false }
        track(skipped: ahead - 1, before: sequence, due: due, packetDuration: packetDuration, at: now)
        return false
    }

    /// The `skipped` numbers before `sequence` are missing: tracks those still worth asking for (`counting`: the others
    /// count as `untracked`).
    private mutating func track(skipped: UInt32, before sequence: UInt32, due: UInt64?, packetDuration: UInt64, at now: UInt64,
                                counting: Bool = true) {
        func notTracked(_ count: UInt32) {
            if counting { statistics.untracked += UInt64(count) }
        }
        guard let due else {
            notTracked(skipped)
            return
        }
        let tracked = min(skipped, policy.window)
        notTracked(skipped - tracked)
        for back in stride(from: tracked, through: 1, by: -1) {  // the oldest first
            let s = sequence &- back
            let before = UInt64(back) &* packetDuration
            guard due > before &+ policy.margin, due - before - policy.margin > now else {
                notTracked(1)
                continue
            }
            missing[s] = Missing(deadline: due - before - policy.margin, nextAsk: now &+ policy.reorderGrace)
            statistics.missing += 1
        }
        // Older numbers beyond the window are no longer worth asking for.
        if missing.count > Int(policy.window) {
            for s in missing.keys where sequence &- s > policy.window {
                missing[s] = nil
                statistics.expired += 1
            }
        }
    }

    /// The sequence numbers to ask for at `now` (oldest first, at most `maxPerRequest`); those past their deadline are
    /// given up. Each returned number is asked again `retryInterval` later if it is still missing.
    public mutating func requests(at now: UInt64) -> [UInt32] {
        var out: [UInt32] = []
        for s in missingSequences {
            guard let m = missing[s] else { continue }
            if now >= m.deadline {
                missing[s] = nil
                statistics.expired += 1
                continue
            }
            guard m.nextAsk <= now, out.count < policy.maxPerRequest else { continue }
            missing[s]!.nextAsk = now &+ policy.retryInterval
            out.append(s)
        }
        statistics.asked += UInt64(out.count)
        return out
    }

    /// Forgets the stream's gaps (pause: the next packet starts anew; the numbers go on, so no gap before it). Statistics
    /// stay.
    public mutating func reset() {
        highest = nil
        fresh = false
        missing = [:]
    }
}
