import LightX

/// The rules of a `SimulatedHeadset` around its `DeviceMachine`, as a value (docs/architecture.md, "State machines as
/// values"): serving or shut down; the power period work belongs to (a request begun before a power loss or the
/// shutdown sends no reply after it); the request queue with its flow control (the bootloader answers NotReady when Q
/// wait, the application stops reading the link); whether the processor runs; the requests answered (what a
/// `stops-after:N` profile counts); when the flash is busy until. One mutating function per event; times are given,
/// never read. The actor keeps the links, tasks, waiters, persistence and the device's hardware machine.
struct HeadsetServiceMachine: Sendable {
    /// A power period (the shell's work carries the one it began in).
    struct Epoch: Sendable, Hashable {
        let number: UInt64
    }

    enum Phase: Sendable, Hashable {
        /// Serving in power period `epoch`; `processing`: the processor task runs (it takes requests until none wait).
        case serving(epoch: Epoch, processing: Bool)
        /// `shutdown()` ran: nothing is accepted, nothing replies.
        case shutDown
    }

    /// What to do with a request a link delivered.
    enum Submission: Sendable, Hashable {
        /// Nothing: the device is off, shut down, or silent now (its profile).
        case ignore
        /// The bootloader's queue is full: answer NotReady at once (the request is not processed).
        case answerNotReady
        /// The application's queue is full: stop reading the link until there is room, then `admitAfterWait`.
        case waitForRoom
        /// Queued; `startProcessor`: start the task that processes the queue (it was not running).
        case queued(startProcessor: Bool)
    }

    let profile: BehaviourProfile
    private(set) var phase: Phase = .serving(epoch: Epoch(number: 0), processing: false)
    /// Requests waiting to be processed, from every link, in arrival order.
    private(set) var queue: RequestQueue
    /// Requests answered (or queued to be) so far.
    private(set) var answered = 0
    /// Power cuts and reboots since the device was created.
    private(set) var powerLosses = 0
    /// When the flash finishes its current operation (absolute, so sleep overshoot does not accumulate).
    private(set) var busyUntil: ContinuousClock.Instant

    init(profile: BehaviourProfile, queueDepth: Int, now: ContinuousClock.Instant) {
        self.profile = profile
        self.queue = RequestQueue(depth: queueDepth)
        self.busyUntil = now
    }

    var isShutDown: Bool { phase == .shutDown }
    /// Whether the device talks now (its profile may stop it after some requests).
    var talks: Bool { profile.answers(afterAnswering: answered) }
    /// The power period now (nil once shut down).
    var epoch: Epoch? {
        if case let .serving(epoch, _) = phase { return epoch }
        return nil
    }

    /// Whether a new host link is served (the device powered and not shut down).
    func acceptsLink(powered: Bool) -> Bool { !isShutDown && powered }

    /// A link delivered `request`.
    mutating func submit(_ request: Packet, from host: UInt64, powered: Bool, image: RunningImage?,
                         now: ContinuousClock.Instant) -> Submission {
        guard !isShutDown, powered, talks else { return .ignore }
        if queue.isFull {
            if image == .bootloader {
                answered += 1
                return .answerNotReady
            }
            return .waitForRoom
        }
        return enqueue(request, from: host, now: now)
    }

    /// Whether a link waiting for room waits on (the queue still full, the device serving).
    var mustWaitForRoom: Bool { queue.isFull && !isShutDown }

    /// A link that waited for room delivers its request now (`hostConnected`, `cancelled`: its link still served,
    /// its task cancelled).
    mutating func admitAfterWait(_ request: Packet, from host: UInt64, powered: Bool, hostConnected: Bool, cancelled: Bool,
                                 now: ContinuousClock.Instant) -> Submission {
        guard !isShutDown, powered, hostConnected, !cancelled else { return .ignore }
        return enqueue(request, from: host, now: now)
    }

    private mutating func enqueue(_ request: Packet, from host: UInt64, now: ContinuousClock.Instant) -> Submission {
        guard case let .serving(epoch, processing) = phase else { return .ignore }
        answered += 1
        queue.append(RequestQueue.Item(host: host, request: request, arrived: now))
        phase = .serving(epoch: epoch, processing: true)
        return .queued(startProcessor: !processing)
    }

    /// The processor takes the oldest request; nil when none waits (or the device shut down): the processor ends.
    mutating func next() -> RequestQueue.Item? {
        guard case let .serving(epoch, _) = phase else { return nil }
        if let item = queue.next() { return item }
        phase = .serving(epoch: epoch, processing: false)
        return nil
    }

    /// The request taken keeps the flash busy for `busy`: until when (after the earlier operation, or its arrival).
    mutating func busy(_ busy: Duration, arrived: ContinuousClock.Instant) -> ContinuousClock.Instant {
        busyUntil = max(busyUntil, arrived) + busy
        return busyUntil
    }

    /// Whether work begun in `epoch` may still reply (no power loss or shutdown since).
    func mayReply(begunIn epoch: Epoch) -> Bool { self.epoch == epoch }

    /// The power is lost: a new period begins, waiting requests are dropped unanswered. Nil once shut down (nothing
    /// happens); else the period the power-up must still be in.
    mutating func powerLost() -> Epoch? {
        guard case let .serving(epoch, processing) = phase else { return nil }
        let next = Epoch(number: epoch.number + 1)
        phase = .serving(epoch: next, processing: processing)
        powerLosses += 1
        queue.removeAll()
        return next
    }

    /// Whether a power-up scheduled in period `expected` happens (no other loss, no shutdown since).
    func mayPowerUp(expecting expected: Epoch) -> Bool { epoch == expected }

    /// The device powered up at `now`: the flash is idle.
    mutating func poweredUp(now: ContinuousClock.Instant) {
        guard !isShutDown else { return }
        busyUntil = now
    }

    /// `shutdown()`: true the first time (the shell then stops everything), false after.
    mutating func shutDown() -> Bool {
        guard !isShutDown else { return false }
        phase = .shutDown
        queue.removeAll()
        return true
    }
}
