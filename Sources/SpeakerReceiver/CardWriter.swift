import Glibc
import Logging
import Speaker
import SpeakerSimulator
import Synchronization
import Transport

/// A condition the writer thread sleeps on: woken by a stream starting or ending, by the receiver stopping, or by its
/// own deadline (CLOCK_MONOTONIC). A generation counter means no wake-up between a look and a wait is lost.
final class WakeSignal: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var condition = pthread_cond_t()
    private var generation: UInt64 = 0
    private var stopping = false

    init() {
        pthread_mutex_init(&mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(&condition, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(&condition)
        pthread_mutex_destroy(&mutex)
    }

    private func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return body()
    }

    /// Something changed: wake the writer.
    func signal() {
        locked {
            generation &+= 1
            pthread_cond_broadcast(&condition)
        }
    }

    /// The receiver stops: the writer ends.
    func stop() {
        locked {
            stopping = true
            generation &+= 1
            pthread_cond_broadcast(&condition)
        }
    }

    /// The generation now, and whether the receiver stops.
    var current: (generation: UInt64, stopping: Bool) { locked { (generation, stopping) } }

    /// Sleeps until the generation moves past `seen`, or until CLOCK_MONOTONIC reaches `deadline` (ns; nil: no
    /// deadline). Only the writer thread calls it.
    func wait(after seen: UInt64, until deadline: UInt64?) {
        locked {
            var ts = timespec(tv_sec: Int(deadline.map { $0 / 1_000_000_000 } ?? 0), tv_nsec: Int(deadline.map { $0 % 1_000_000_000 } ?? 0))
            while generation == seen {
                if deadline != nil {
                    if pthread_cond_timedwait(&condition, &mutex, &ts) == ETIMEDOUT { return }
                } else {
                    pthread_cond_wait(&condition, &mutex)
                }
            }
        }
    }
}

/// What a receiver's output has done, for tests and the benchmark.
public struct OutputStatistics: Sendable, Hashable {
    /// Streams the output played (the device opened for each).
    public var streams: UInt64 = 0
    /// Frames written to the device (silence and corrections included).
    public var framesWritten: UInt64 = 0
    public var aligner = CardAligner.Statistics()
    /// Whether the last device kept time (nil: nothing written yet).
    public var timed: Bool?
    /// Ticks (writes) while streams played.
    public var ticks: UInt64 = 0
    /// The writer sleeps until a stream starts, with no deadline (nothing runs).
    public var idle = false
}

/// The receiver's sound card output: a thread of its own that sleeps on `WakeSignal` while no stream plays (no pump)
/// and, while one does, every `tick` reads the device's position report, asks the `CardAligner` what to write and
/// writes the speaker's rendered slots (`SimulatedSpeaker.render(through:)`) to the ALSA device — opened when a
/// stream starts, drained and closed when it ends, so the card is free for others meanwhile. ALSA's blocking calls
/// never touch Swift's cooperative pool. The same thread reads the audio datagrams waiting on the UDP socket before
/// each write (packets come 200 ms ahead, a tick is 10 ms): no task, and no thread switch, per datagram — that was a
/// third of a receiver's CPU.
final class CardWriter: @unchecked Sendable {
    let speaker: SimulatedSpeaker
    /// The speaker's audio port: read here only (the speaker's own receiving task is not started).
    let audio: UDPSocket
    let device: String
    let lead: UInt64
    let latency: Int64
    let tick: UInt64
    let wake = WakeSignal()
    private let finished = Mutex<[CheckedContinuation<Void, Never>]?>([])
    private let stats = Mutex(OutputStatistics())
    private let logger: Logger?

    init(speaker: SimulatedSpeaker, audio: UDPSocket, device: String, lead: UInt64, latency: Int64, tick: UInt64, logger: Logger?) {
        self.speaker = speaker
        self.audio = audio
        self.device = device
        self.lead = lead
        self.latency = latency
        self.tick = tick
        self.logger = logger
    }

    var statistics: OutputStatistics { stats.withLock { $0 } }

    /// Waits until the thread has ended (after `wake.stop()`).
    func ended() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = finished.withLock { waiting -> Bool in
                guard waiting != nil else { return true }
                waiting!.append(c)
                return false
            }
            if done { c.resume() }
        }
    }

    /// The thread's body.
    func run() {
        var pcm: ALSAPCM?
        var aligner: CardAligner?
        var streams = 0 as UInt64
        var scratch: [UInt8] = []
        while true {
            let (seen, stopping) = wake.current
            let format = stopping ? nil : speaker.streamFormat
            guard let format else {
                if let open = pcm {
                    open.drain()
                    pcm = nil
                    aligner = nil
                }
                if stopping { break }
                stats.withLock { $0.idle = true }
                wake.wait(after: seen, until: nil)
                stats.withLock { $0.idle = false }
                continue
            }
            if pcm == nil || pcm?.format != format {
                pcm = nil
                do {
                    let opened = try ALSAPCM(device: device)
                    // The ring buffer holds twice the lead: writes never wait for room.
                    try opened.configure(format, bufferMicroseconds: UInt32(clamping: 2 * lead / 1000))
                    pcm = opened
                    aligner = CardAligner(sampleRate: format.sampleRate, lead: lead, latency: latency)
                    streams += 1
                    stats.withLock { $0.streams = streams }
                } catch {
                    logger?.warning("\(error.message)")
                    speaker.stopPlayback(error: .unsupportedFormat, message: error.message)
                    continue
                }
            }
            guard let open = pcm, var a = aligner else { continue }
            guard let delay = open.delay() else {
                fail(open, "ALSA device '\(device)' failed: \(open.lastError)")
                pcm = nil
                continue
            }
            if !open.isRunning, a.timed == true { a.restart() }  // an underrun: the device was prepared again
            // What came since the last write (a closed socket: the receiver is shutting down, nothing more comes).
            while let datagram = try? audio.receiveIfReady(scratch: &scratch) { speaker.deliver(datagram, fromHost: nil) }
            let now = speaker.configuration.clock.now()
            guard let next = speaker.nextRenderSlot else { continue }
            let plan = a.plan(now: now, delay: delay, nextSlot: next)
            var out: [UInt8] = []
            if let discard = plan.discardThrough { _ = speaker.render(through: discard) }
            if plan.silenceFrames > 0 { out = [UInt8](repeating: 0, count: plan.silenceFrames * format.bytesPerFrame) }
            if let rendered = speaker.render(through: plan.renderThrough) {
                var pcmBytes = rendered.pcm
                CardAligner.apply(plan.correction, to: &pcmBytes, bytesPerFrame: format.bytesPerFrame)
                if out.isEmpty { out = pcmBytes } else { out += pcmBytes }
            }
            guard open.write(out) else {
                fail(open, "ALSA device '\(device)' failed: \(open.lastError)")
                pcm = nil
                continue
            }
            let frames = out.count / format.bytesPerFrame
            if a.timed == nil, frames > 0, let after = open.delay() { a.wrote(frames: frames, delayAfter: after) }
            aligner = a
            stats.withLock {
                $0.framesWritten += UInt64(frames)
                $0.aligner = a.statistics
                $0.timed = a.timed
                $0.ticks += 1
            }
            wake.wait(after: seen, until: TimeSource.monotonic.now() &+ tick)
        }
        let waiting = finished.withLock { w in defer { w = nil }; return w ?? [] }
        for c in waiting { c.resume() }
    }

    private func fail(_ pcm: ALSAPCM, _ message: String) {
        logger?.warning("\(message)")
        pcm.drop()
        speaker.stopPlayback(error: .audioUnderrun, message: message)
    }
}
