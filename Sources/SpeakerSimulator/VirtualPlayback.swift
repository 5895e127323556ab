import Speaker
import SpeakerPlayback
import Support
import Transport

/// A playback to many simulated speakers on virtual time: the controller's `StreamSchedule` and `ClockTracker`, the
/// codec's audio datagrams and clock-sync values, and each speaker's `SpeakerRenderer` on its `DACClock`, exchanged over
/// modelled network paths (`LinkJitter`) — the same code as the live player and speakers, without sockets, so a minute
/// of music runs in seconds and every figure is exact. What it leaves out is the I/O path itself (sockets, tasks,
/// scheduling delays); the live figures come from `SpeakerPlayer` against `SpeakerSimulation`.
///
/// The controller's clock is true time. Each speaker's DAC clock has its offset and drift; a clock-sync request and
/// its reply each take `controlLatency` plus the control path's jitter, the audio datagrams `audioLatency` plus the
/// audio path's jitter and loss.
public struct VirtualPlayback {
    public struct Speaker: Sendable {
        public var clock: DACClock
        public var audio: LinkJitter
        public var control: LinkJitter
        /// Seconds after the start of playback when it is added to the session (nil: from the start).
        public var joinsAfter: Double?

        public init(clock: DACClock, audio: LinkJitter = .none, control: LinkJitter = .none, joinsAfter: Double? = nil) {
            self.clock = clock
            self.audio = audio
            self.control = control
            self.joinsAfter = joinsAfter
        }
    }

    public struct Configuration: Sendable {
        public var speakers: [Speaker]
        public var format: AudioFormat = .cd
        /// Seconds of signal played.
        public var seconds: Double = 10
        /// The player's buffer and tick, as the live player (`SpeakerPlayer`) takes them.
        public var player = PlayerOptions()
        /// Seconds of clock tracking before play (speakers are in the session from the start).
        public var leadIn: Double = 1.5
        public var controlLatency: UInt64 = 300_000
        public var audioLatency: UInt64 = 300_000
        public var seed: UInt64 = 1
        /// Keep each speaker's output PCM (for fidelity checks).
        public var keepOutput = true
        /// Lost-packet recovery (§7.1): speakers send `resendRequest`s over the control path and the controller sends
        /// the packets again from its history (false: protocol version 1, lost packets play as silence).
        public var recovery = true

        public init(speakers: [Speaker]) { self.speakers = speakers }

        /// Packets are sent this far ahead of their presentation time (ns).
        var buffer: UInt64 { nanoseconds(player.buffer) }
        /// The streaming loop wakes this often (ns), as the live player's.
        var tick: UInt64 { nanoseconds(player.wakeInterval) }

        private func nanoseconds(_ d: Duration) -> UInt64 {
            UInt64(d.components.seconds) * 1_000_000_000 + UInt64(d.components.attoseconds / 1_000_000_000)
        }
    }

    /// What one speaker did.
    public struct SpeakerResult: Sendable {
        public var log: RenderLog
        public var pcm: [UInt8]
        /// True time it was added (play time, or its join).
        public var addedAt: UInt64
        /// True time of its first source frame out (nil: none).
        public var firstOut: UInt64?
        public var mapsSent = 0
        public var clockSyncs = 0
        /// What its lost-packet recovery counted.
        public var recovery = LossRecovery.Statistics()
        /// Resend requests it sent, and packets the controller sent it again.
        public var resendRequests = 0
        public var resentPackets = 0
    }

    public struct Result: Sendable {
        public var speakers: [SpeakerResult]
        /// True time play was called.
        public var playAt: UInt64
        /// The controller's presentation time of every frame: anchor time and frame.
        public var anchorTime: UInt64
        public var anchorFrame: UInt64
        public var format: AudioFormat
        public var packetsSent = 0
        /// Bytes of those datagrams (once each, not per speaker): PCM against FLAC on the wire.
        public var bytesSent = 0
    }

    public let configuration: Configuration
    public let source: GeneratedSignal

    public init(_ configuration: Configuration, source: GeneratedSignal) {
        self.configuration = configuration
        self.source = source
    }

    private struct Node {
        var spec: Speaker
        var tracker = ClockTracker()
        var nextSync: UInt64
        var syncs: [(at: UInt64, sample: ClockSample)] = []
        var maps: [(at: UInt64, map: ClockMap)] = []
        var lastMapArrival: UInt64 = 0
        var speakerMap: ClockMap?
        var mapInstalledAt: UInt64?
        var renderer: SpeakerRenderer?
        /// Datagrams that arrived before the play request was handled (delivered to the renderer when it exists).
        var early: [(packet: AudioPacket, arrival: UInt64)] = []
        var playArrival: UInt64?
        var receiving = false
        var member: Bool
        var addedAt: UInt64
        var log: RenderLog
        var pcm: [UInt8] = []
        var firstOut: UInt64?
        var rng: SeededRandom
        var mapsSent = 0
        var clockSyncs = 0
        var resendRequests = 0
        var resentPackets = 0
    }

    /// Runs the playback to its end (plus half a second).
    public func run() -> Result {
        let c = configuration
        let start: UInt64 = 1_000_000_000
        let playAt = start + UInt64(c.leadIn * 1e9)
        let totalFrames = source.totalFrames ?? UInt64(c.seconds * Double(c.format.sampleRate))
        var nodes = c.speakers.enumerated().map { k, spec in
            Node(spec: spec, nextSync: start, member: spec.joinsAfter == nil,
                 addedAt: spec.joinsAfter.map { playAt + UInt64($0 * 1e9) } ?? start,
                 log: RenderLog(streamId: 7, format: c.format, clock: spec.clock), rng: SeededRandom(seed: c.seed &+ UInt64(k) &* 7919))
        }
        var schedule = StreamSchedule(streamId: 7, format: c.format, encoding: c.player.encoding, startFrame: 0, startTime: playAt)
        var playing = false
        var anchored = false
        var history: [(sequence: UInt32, presentation: UInt64, bytes: [UInt8])] = []
        var resends: [(at: UInt64, node: Int, sequences: [UInt32])] = []
        var packetsSent = 0, bytesSent = 0
        var sourceFrame: UInt64 = 0
        var endSent = false
        let end = playAt + c.buffer + UInt64(c.seconds * 1e9) + 1_000_000_000
        let step: UInt64 = 1_000_000
        var t = start

        func rtt(_ n: inout Node) -> UInt64 {
            let up = c.controlLatency + (n.spec.control.draw(&n.rng) ?? 0)
            let down = c.controlLatency + (n.spec.control.draw(&n.rng) ?? 0)
            return up + down
        }

        while t <= end {
            // Control: clock sync exchanges and maps.
            for k in nodes.indices where nodes[k].member || t >= nodes[k].addedAt {
                if !nodes[k].member {
                    nodes[k].member = true
                    nodes[k].nextSync = t + rtt(&nodes[k])  // joinSession first
                }
                if t >= nodes[k].nextSync {
                    let up = c.controlLatency + (nodes[k].spec.control.draw(&nodes[k].rng) ?? 0)
                    let down = c.controlLatency + (nodes[k].spec.control.draw(&nodes[k].rng) ?? 0)
                    let t2 = nodes[k].spec.clock.time(atTrueTime: t + up)
                    let t3 = t2 + 20_000
                    if let reply = try? ClockSyncReply(t1: t, t2: t2, t3: t3) {
                        let t4 = t + up + 20_000 + down
                        nodes[k].syncs.append((t4, ClockSample(reply, receivedAt: t4)))
                    }
                    nodes[k].nextSync = .max
                    nodes[k].clockSyncs += 1
                }
                while let first = nodes[k].syncs.first, first.at <= t {
                    nodes[k].syncs.removeFirst()
                    nodes[k].tracker.add(first.sample)
                    if let map = nodes[k].tracker.mapToSend(at: first.at) {
                        let arrival = max(first.at + c.controlLatency + (nodes[k].spec.control.draw(&nodes[k].rng) ?? 0), nodes[k].lastMapArrival)
                        nodes[k].lastMapArrival = arrival
                        nodes[k].maps.append((arrival, map))
                        nodes[k].mapsSent += 1
                        if nodes[k].mapInstalledAt == nil { nodes[k].mapInstalledAt = arrival + c.controlLatency }
                    }
                    nodes[k].nextSync = first.at + Self.ns(nodes[k].tracker.nextInterval)
                }
                while let first = nodes[k].maps.first, first.at <= t {
                    nodes[k].maps.removeFirst()
                    nodes[k].speakerMap = first.map
                    nodes[k].renderer?.map = first.map
                }
            }
            // Play: every member with a clock gets the play request in turn; the stream starts `buffer` later.
            if !playing, t >= playAt {
                var at = t
                for k in nodes.indices where nodes[k].member {
                    guard let installed = nodes[k].mapInstalledAt, installed <= at else { continue }
                    at += rtt(&nodes[k])
                    nodes[k].playArrival = at - c.controlLatency
                    nodes[k].receiving = true
                    nodes[k].addedAt = playAt
                }
                schedule.anchor(frame: 0, at: at + c.buffer)
                playing = true
                anchored = true
            }
            // A speaker added during playback: play once its clock is installed, then the packets still ahead.
            if playing {
                for k in nodes.indices where nodes[k].member && !nodes[k].receiving {
                    guard let installed = nodes[k].mapInstalledAt, installed <= t else { continue }
                    let done = t + rtt(&nodes[k])
                    nodes[k].playArrival = done - c.controlLatency
                    nodes[k].receiving = true
                    for entry in history where entry.presentation > done + 20_000_000 {
                        deliver(entry.bytes, at: done, to: &nodes[k])
                    }
                }
            }
            for k in nodes.indices {
                if nodes[k].renderer == nil, let arrival = nodes[k].playArrival, arrival <= t {
                    nodes[k].renderer = SpeakerRenderer(streamId: 7, format: c.format, map: nodes[k].speakerMap,
                                                        startDAC: nodes[k].spec.clock.time(atTrueTime: arrival))
                    for e in nodes[k].early { nodes[k].renderer!.receive(e.packet, arrival: e.arrival) }
                    nodes[k].early = []
                }
            }
            // Streaming, on the player's tick.
            if anchored, !endSent, t % c.tick < step {
                while !endSent, schedule.nextPresentationTime <= t + c.buffer {
                    let n = Int(min(UInt64(schedule.framesPerPacket), totalFrames - sourceFrame))
                    let last = sourceFrame + UInt64(n) >= totalFrames
                    let pcm = source.frames(sourceFrame, count: n)
                    sourceFrame += UInt64(n)
                    let next = last ? [] : source.frames(sourceFrame, count: 1)[...]
                    guard let packet = try? schedule.packet(pcm: pcm, endOfStream: last, next: next) else { break }
                    let bytes = packet.encode()
                    packetsSent += 1
                    bytesSent += bytes.count
                    endSent = last
                    history.append((packet.sequence, packet.presentationTime, bytes))
                    if history.count > 256 { history.removeFirst(history.count - 256) }
                    for k in nodes.indices where nodes[k].receiving {
                        // The end of the stream goes out three times, as the live player sends it.
                        for _ in 0..<(last ? 3 : 1) { deliver(bytes, at: t, to: &nodes[k]) }
                    }
                }
            }
            // Lost-packet recovery: resend requests that reached the controller are answered from its history.
            if !resends.isEmpty {
                var waiting: [(at: UInt64, node: Int, sequences: [UInt32])] = []
                for r in resends {
                    guard r.at <= t else { waiting.append(r); continue }
                    for sequence in r.sequences {
                        guard let entry = history.first(where: { $0.sequence == sequence }), entry.presentation > t else { continue }
                        nodes[r.node].resentPackets += 1
                        deliver(entry.bytes, at: t, to: &nodes[r.node])
                    }
                }
                resends = waiting
            }
            // Rendering.
            for k in nodes.indices where nodes[k].renderer != nil {
                let dac = nodes[k].spec.clock.time(atTrueTime: t)
                if c.recovery, let next = nodes[k].renderer!.nextRecoveryEvent, next <= dac {
                    let sequences = nodes[k].renderer!.resendRequests(at: dac)
                    if !sequences.isEmpty {
                        nodes[k].resendRequests += 1
                        resends.append((t + c.controlLatency + (nodes[k].spec.control.draw(&nodes[k].rng) ?? 0), k, sequences))
                    }
                }
                var out: [UInt8] = []
                var runs: [RenderRun] = []
                swap(&runs, &nodes[k].log.runs)
                let events = nodes[k].renderer!.render(through: dac, output: &out, log: &runs)
                swap(&runs, &nodes[k].log.runs)
                if c.keepOutput { nodes[k].pcm += out }
                if nodes[k].firstOut == nil, events.contains(where: { if case .firstAudio = $0 { true } else { false } }),
                   let run = nodes[k].log.firstSource {
                    nodes[k].firstOut = UInt64(nodes[k].log.trueTime(ofSlot: run.slot))
                }
            }
            t += step
        }
        for k in nodes.indices { nodes[k].log.statistics = nodes[k].renderer?.statistics ?? RenderStatistics() }
        return Result(
            speakers: nodes.map {
                SpeakerResult(log: $0.log, pcm: $0.pcm, addedAt: $0.addedAt, firstOut: $0.firstOut, mapsSent: $0.mapsSent,
                              clockSyncs: $0.clockSyncs, recovery: $0.renderer?.recovery.statistics ?? LossRecovery.Statistics(),
                              resendRequests: $0.resendRequests, resentPackets: $0.resentPackets)
            },
            playAt: playAt, anchorTime: schedule.anchorTime, anchorFrame: schedule.anchorFrame, format: c.format, packetsSent: packetsSent,
            bytesSent: bytesSent)
    }

    private func deliver(_ bytes: [UInt8], at t: UInt64, to node: inout Node) {
        guard let delay = node.spec.audio.draw(&node.rng), let packet = try? AudioPacket.decode(bytes) else { return }
        let arrival = node.spec.clock.time(atTrueTime: t + configuration.audioLatency + delay)
        if node.renderer == nil { node.early.append((packet, arrival)) } else { node.renderer!.receive(packet, arrival: arrival) }
    }

    static func ns(_ d: Duration) -> UInt64 {
        let (s, a) = d.components
        return UInt64(max(0, s)) &* 1_000_000_000 &+ UInt64(max(0, a) / 1_000_000_000)
    }
}
