import Speaker

/// The controller's running estimate of one speaker's clock (docs/speaker-protocol.md §6): clock-sync samples in, the
/// `ClockMap` to send out, and when to measure next. A pure value, so the live player and the virtual-time simulation
/// (`VirtualPlayback`) run the same policy.
///
/// - Fitting: over a span of at least `rateSpan` the offset and the drift are fitted (`ClockMap.fit`, weighted least
///   squares) through the fastest sample of each of `buckets` stretches of the window, so the slope is measured over
///   all of it, each weighted by how close its round trip is to the fastest (one `tolerance` slower: half; a sample
///   that waited on one leg is off by up to half its extra delay); before that the rate is taken as 0 and the offset is that of the sample least off by its extra round trip and its age (`earlyDrift`), refreshed every `earlyInterval`.
/// - Sending: a new map when none was sent, or when the new estimate places `horizon` from now more than
///   `sendThreshold` away from the map sent last.
public struct ClockTracker: Sendable {
    public var window = 128
    public var tolerance: UInt64 = 100_000
    /// Stretches of the window the fitted points are taken from (one each).
    public var buckets = 8
    public var rateSpan: UInt64 = 1_000_000_000
    /// Exchanges stay at `earlyInterval` until the window spans this much (the first drift estimates, over a short
    /// span, are the noisiest: more points make them better).
    public var earlySpan: UInt64 = 3_000_000_000
    public var sendThreshold: UInt64 = 5_000
    public var horizon: UInt64 = 1_000_000_000
    /// Exchanges during the first `burst` samples, before `earlySpan` is covered, and after.
    public var burst = 8
    public var burstInterval: Duration = .milliseconds(10)
    public var earlyInterval: Duration = .milliseconds(50)
    public var steadyInterval: Duration = .milliseconds(250)
    /// The drift assumed before it is measured (a crystal's ±500 ppm), to weigh an older sample against a slower one.
    public var earlyDrift = 500e-6

    public private(set) var samples: [ClockSample] = []
    /// The map last handed out by `mapToSend` (what the speaker uses).
    public private(set) var sent: ClockMap?

    public init() {}

    public mutating func add(_ sample: ClockSample) {
        guard sample.delay >= 0 else { return }
        samples.append(sample)
        if samples.count > window { samples.removeFirst(samples.count - window) }
    }

    /// Forgets every sample and the map sent (the speaker restarted).
    public mutating func reset() {
        samples.removeAll()
        sent = nil
    }

    /// How long to wait before the next exchange.
    public var nextInterval: Duration {
        if samples.count < burst { return burstInterval }
        return span < earlySpan ? earlyInterval : steadyInterval
    }

    /// The time the samples' midpoints cover.
    private var span: UInt64 {
        guard let first = samples.map(\.midpoint).min(), let last = samples.map(\.midpoint).max() else { return 0 }
        return last - first
    }

    /// The current estimate (nil before the first sample).
    public var estimate: ClockMap? {
        guard !samples.isEmpty else { return nil }
        if span < rateSpan {
            // Rate unknown yet (0). A sample's offset is off by up to half its round trip beyond the fastest seen (it
            // waited on one leg), and an older one also by the drift since it was taken: the sample whose bound of
            // both is least gives the offset — the newest while it is about as fast as the fastest, an older fast one
            // when the newest waited (the map then lags by tens of µs of drift instead of jumping by milliseconds).
            let fastest = samples.map(\.delay).min()!, newest = samples.map(\.midpoint).max()!
            let bound = { (s: ClockSample) in Double(s.delay - fastest) / 2 + Double(newest - s.midpoint) * earlyDrift }
            let best = samples.min { bound($0) < bound($1) }!
            return try? ClockMap(controllerReference: best.midpoint, speakerReference: best.midpoint &+ UInt64(bitPattern: best.offset), rate: 0)
        }
        // The drift is the slope, so the fitted points must spread over the window: points crowded into one stretch
        // of it turn their offset noise into a rate error (50 µs over 0.2 s is 250 ppm). So the fastest sample of
        // each of `buckets` equal stretches of the window is a point, weighted by how close its round trip is to the
        // fastest of all (a sample that waited on one leg is off by up to half its extra delay): one `tolerance`
        // slower than the fastest counts half, three a tenth.
        // (Bounds from the smallest and largest midpoint: exchanges that overlapped can finish out of order.)
        let first = samples.map(\.midpoint).min()!, whole = max(1, span)
        var best: [ClockSample?] = Array(repeating: nil, count: buckets)
        for s in samples {
            let (high, low) = (s.midpoint - first).multipliedFullWidth(by: UInt64(buckets))
            let b = min(buckets - 1, Int(whole.dividingFullWidth((high, low)).quotient))
            if best[b].map({ s.delay < $0.delay }) ?? true { best[b] = s }
        }
        let points = best.compactMap { $0 }
        let fastest = Double(points.map(\.delay).min()!)
        // Points that count crowded into a short stretch (the others waited long: a loaded machine) cannot measure
        // the drift: then the offset is fitted with the rate of the map sent last.
        return ClockMap.fit(points, weights: points.map { p in
            let excess = (Double(p.delay) - fastest) / Double(tolerance)
            return 1 / (1 + excess * excess)
        }, minimumSpread: Double(rateSpan) / 4, fallbackRate: sent?.rate ?? 0)
    }

    /// The map to send now (at controller time `now`), or nil when the speaker's map is still good.
    public mutating func mapToSend(at now: UInt64) -> ClockMap? {
        guard let map = estimate else { return nil }
        if let sent {
            let at = now &+ horizon
            let a = sent.speakerTime(forControllerTime: at), b = map.speakerTime(forControllerTime: at)
            let c = sent.speakerTime(forControllerTime: now), d = map.speakerTime(forControllerTime: now)
            guard max(a > b ? a - b : b - a, c > d ? c - d : d - c) > sendThreshold else { return nil }
        }
        sent = map
        return map
    }
}

/// The controller's packetizer and timeline of one stream: frame indices, sequence numbers and presentation times.
/// Frames `anchorFrame...` are presented from `anchorTime` on at the stream's nominal rate; a resume re-anchors (the
/// frame indices go on, the times start anew). A pure value shared by the player and `VirtualPlayback`.
public struct StreamSchedule: Sendable {
    public let streamId: UInt32
    public let format: AudioFormat
    /// How the packets carry the samples (FLAC packets hold fewer frames: `AudioPacket.maxFrames(for:encoding:)`).
    public let encoding: AudioEncoding
    public private(set) var nextFrame: UInt64
    public private(set) var sequence: UInt32 = 0
    public private(set) var anchorFrame: UInt64
    public private(set) var anchorTime: UInt64
    /// FLAC: the stream's encoder while packets follow each other (a new one after a re-anchor or a packet without
    /// `next`).
    private var encoder: FLACStreamEncoder?

    public init(streamId: UInt32, format: AudioFormat, encoding: AudioEncoding = .pcm, startFrame: UInt64 = 0, startTime: UInt64) {
        self.streamId = streamId
        self.format = format
        self.encoding = encoding
        nextFrame = startFrame
        anchorFrame = startFrame
        anchorTime = startTime
    }

    /// The most frames one packet holds.
    public var framesPerPacket: Int { AudioPacket.maxFrames(for: format, encoding: encoding) }

    /// When frame `frame` (≥ the anchor) is heard, controller time.
    public func presentationTime(ofFrame frame: UInt64) -> UInt64 {
        anchorTime &+ format.nanoseconds(forFrames: frame &- anchorFrame)
    }

    public var nextPresentationTime: UInt64 { presentationTime(ofFrame: nextFrame) }

    /// The frame heard at controller time `time` (the anchor before it; never beyond `nextFrame`).
    public func frame(at time: UInt64) -> UInt64 {
        guard time > anchorTime else { return anchorFrame }
        let (high, low) = (time - anchorTime).multipliedFullWidth(by: UInt64(format.sampleRate))
        let frames = high >= 1_000_000_000 ? UInt64.max : UInt64(1_000_000_000).dividingFullWidth((high, low)).quotient
        return min(nextFrame, anchorFrame &+ frames)
    }

    /// Frames from now on start at `frame`, heard from `time` (start, resume, seek).
    public mutating func anchor(frame: UInt64, at time: UInt64) {
        nextFrame = frame
        anchorFrame = frame
        anchorTime = time
        encoder = nil  // what follows need not continue what the encoder holds
    }

    /// The next packet with `pcm` (whole frames, at most `framesPerPacket`); advances the frame and sequence. With
    /// FLAC, `next` is the first frame that follows (the stream's encoder writes a block once it has one frame more:
    /// `FLACStreamEncoder`); without it a FLAC stream's encoder is finished and the next packet starts a new one.
    public mutating func packet(pcm: [UInt8], endOfStream: Bool = false, next: ArraySlice<UInt8> = []) throws(SpeakerError) -> AudioPacket {
        let packet: AudioPacket
        if encoding == .flac, !pcm.isEmpty {
            if encoder == nil { encoder = try FLACStreamEncoder(format: format, frames: max(16, framesPerPacket)) }
            let frame = try encoder!.encode(pcm, next: endOfStream ? [] : next)
            if encoder!.isFinished { encoder = nil }
            packet = try AudioPacket(streamId: streamId, sequence: sequence, firstFrame: nextFrame, presentationTime: nextPresentationTime,
                                     format: format, endOfStream: endOfStream, pcm: pcm, flacFrame: frame)
        } else {
            packet = try AudioPacket(streamId: streamId, sequence: sequence, firstFrame: nextFrame,
                                     presentationTime: nextPresentationTime, format: format, endOfStream: endOfStream,
                                     encoding: encoding, pcm: pcm)
        }
        sequence &+= 1
        nextFrame &+= UInt64(packet.frameCount)
        return packet
    }
}
