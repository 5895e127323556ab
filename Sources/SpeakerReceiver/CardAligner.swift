/// Keeps a sound card's output on the speaker's DAC clock (pure: times and positions in, decisions out).
///
/// The receiver's DAC clock is the host's monotonic clock (what it answers clock sync with); the renderer fills DAC
/// slots on it (slot n is due at n × 10⁹ / rate). The card plays at its own crystal's rate. Each tick, before writing,
/// the card's position report (`delay`: frames written and not yet played, read with the clock's time `now`) says
/// when the next frame written will be heard: `now + delay / rate + latency`. The slot written next should be the one
/// due then; the difference, in slots, is the error e:
/// - e estimated by a straight line fitted (least squares) through the last 32 ticks' errors, read at now: position
///   reports are noisy (to a millisecond on USB cards), and the fit follows the drift without the lag of a mean;
/// - the estimate beyond +1 slot (the card runs fast, the stream would come early): one frame is played twice
///   (`insert`); beyond −1 (slow, late): one frame left out (`drop`) — one sample of correction each, counted, at
///   most one a tick (the receiver's 50 ms tick: 20 a second, 416 ppm), and the errors held move by it;
/// - |e| above `resyncLimit` (the start, an underrun, a stalled host): the output jumps to the right slot — slots
///   due before it are left out, or silence fills the gap — and the mean starts again (`resyncs`).
/// A device that reports every frame played as soon as it is written (alsa-lib's `null`, and the `file` plugin over
/// it: no clock of its own) is `untimed`: it gets the slots in order as the host's clock reaches them, uncorrected.
public struct CardAligner: Sendable {
    public enum Correction: Sendable, Hashable { case none, insert, drop }

    /// What to do this tick.
    public struct Plan: Sendable, Hashable {
        /// Leave out (render and throw away) the slots due at or before this DAC time first (nil: none).
        public var discardThrough: UInt64?
        /// Write this many frames of silence first (the card is ahead of the stream).
        public var silenceFrames: Int
        /// Then render and write every slot due at or before this DAC time.
        public var renderThrough: UInt64
        /// Applied to the frames rendered this tick.
        public var correction: Correction
    }

    public struct Statistics: Sendable, Hashable {
        public var insertedSamples: UInt64 = 0
        public var droppedSamples: UInt64 = 0
        public var resyncs: UInt64 = 0
        public var correctedSamples: UInt64 { insertedSamples + droppedSamples }
        public init() {}
    }

    /// Errors beyond this (ns) are a jump, not a drift (the renderer's own limit).
    public static let resyncLimit: Double = 2_000_000

    public let sampleRate: UInt32
    /// Audio kept queued in the card ahead of the clock (ns).
    public let lead: UInt64
    /// Output latency after ALSA's report (ns): positive plays earlier, negative later (`--latency-ms`).
    public let latency: Int64
    public private(set) var statistics = Statistics()
    /// Whether the device keeps time (nil: not known before the first write).
    public private(set) var timed: Bool?
    /// The estimated error, slots.
    public private(set) var meanError: Double = 0
    /// The last ticks' (time in seconds since the start, error in slots).
    private var history: [(t: Double, e: Double)] = []
    private var origin: UInt64 = 0
    private static let window = 32

    private var started = false
    private let slotPeriod: Double

    public init(sampleRate: UInt32, lead: UInt64, latency: Int64) {
        self.sampleRate = sampleRate
        self.lead = lead
        self.latency = latency
        slotPeriod = 1e9 / Double(sampleRate)
    }

    /// The DAC time of slot `n`.
    public func slotTime(_ n: UInt64) -> UInt64 {
        let (high, low) = n.multipliedFullWidth(by: 1_000_000_000)
        return UInt64(sampleRate).dividingFullWidth((high, low)).quotient
    }

    /// The output starts again from an empty device (a new stream, the device prepared after an underrun).
    public mutating func restart() {
        started = false
        meanError = 0
        history.removeAll()
    }

    /// This tick's plan: `now` is the DAC clock's time of the report, `delay` the frames the device holds, `nextSlot`
    /// the renderer's next slot.
    public mutating func plan(now: UInt64, delay: Int, nextSlot: UInt64) -> Plan {
        let target = Int64(bitPattern: now) &+ latency
        let renderThrough = UInt64(bitPattern: max(0, target &+ Int64(lead)))
        // The device's position is a whole frame: the one playing is half done on average.
        let heard = Double(target) + (Double(delay) - (timed == true ? 0.5 : 0)) * slotPeriod
        let error = (Double(slotTime(nextSlot)) - heard) / slotPeriod
        var plan = Plan(discardThrough: nil, silenceFrames: 0, renderThrough: renderThrough, correction: .none)
        if !started || (timed == true && abs(error) * slotPeriod > Self.resyncLimit) {
            if started { statistics.resyncs += 1 }
            started = true
            meanError = 0
            history.removeAll()
            origin = now
            if error < 0 {
                plan.discardThrough = UInt64(max(0, heard - slotPeriod / 2))
            } else {
                plan.silenceFrames = Int(error.rounded())
            }
            return plan
        }
        guard timed == true else { return plan }
        let t = Double(now &- origin) / 1e9
        history.append((t, error))
        if history.count > Self.window { history.removeFirst(history.count - Self.window) }
        meanError = Self.fit(history, at: t)
        let step: Double
        if meanError >= 1 {
            plan.correction = .insert
            statistics.insertedSamples += 1
            step = -1
        } else if meanError <= -1 {
            plan.correction = .drop
            statistics.droppedSamples += 1
            step = 1
        } else {
            return plan
        }
        // An inserted frame is heard before every later one: they all come a slot later (a dropped one: earlier).
        for i in history.indices { history[i].e += step }
        meanError += step
        return plan
    }

    /// The least-squares line through `points`, read at `t` (the mean with fewer than 8 points).
    static func fit(_ points: [(t: Double, e: Double)], at t: Double) -> Double {
        let n = Double(points.count)
        let mt = points.reduce(0) { $0 + $1.t } / n, me = points.reduce(0) { $0 + $1.e } / n
        guard points.count >= 8 else { return me }
        var stt = 0.0, ste = 0.0
        for p in points {
            stt += (p.t - mt) * (p.t - mt)
            ste += (p.t - mt) * (p.e - me)
        }
        guard stt > 0 else { return me }
        return me + ste / stt * (t - mt)
    }

    /// After a write of `frames` frames the device reported `delay`: a device that holds nothing right after a write
    /// keeps no time (decided at the first write).
    public mutating func wrote(frames: Int, delayAfter delay: Int) {
        guard timed == nil, frames > 0 else { return }
        timed = delay > 0
    }

    /// `pcm` (whole frames of `bytesPerFrame`) with `correction` applied: its last frame played twice, or its last
    /// frame left out (a frame in the middle would do as well; the end keeps the bookkeeping simple).
    public static func apply(_ correction: Correction, to pcm: inout [UInt8], bytesPerFrame: Int) {
        guard pcm.count >= bytesPerFrame else { return }
        switch correction {
        case .none: break
        case .insert: pcm.append(contentsOf: pcm[(pcm.count - bytesPerFrame)...])
        case .drop: pcm.removeLast(bytesPerFrame)
        }
    }
}
