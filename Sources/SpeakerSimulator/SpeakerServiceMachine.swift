import Speaker

/// The rules of a simulated speaker's life around its playback as a value (docs/architecture.md, "State machines as
/// values"): whether it serves or was shut down, whether it has power, its control links (greeted or not, with the
/// version their hello chose), its DAC clock running or stalled, the clock map a controller installed, the clock-sync
/// requests it answered, and how many times it opened each stream. The playback's own rules are
/// `SpeakerStreamMachine`. One mutating function per event, the time given as an argument; the shell
/// (`SimulatedSpeaker`) keeps the links, their outboxes, the sockets, the renderer, the recordings and the time source.
package struct SpeakerServiceMachine: Sendable, Hashable {
    /// Whether the speaker serves (`shutdown()` ends it for good).
    package enum Service: Sendable, Hashable { case serving, shutDown }

    /// Whether the speaker has power (`powerOff()`/`powerOn()`: a reboot, a speaker gone off the network).
    package enum Power: Sendable, Hashable { case on, off }

    /// A control link: before its hello, or speaking the version its hello chose.
    package enum Link: Sendable, Hashable {
        case greeting
        case speaking(version: UInt8)
    }

    /// The DAC clock, shifted back by the stalls so far: running, or stalled (showing `at`) until true time `until`.
    package enum Clock: Sendable, Hashable {
        case running(shift: Int64)
        case stalled(at: UInt64, until: UInt64, shift: Int64)
    }

    /// Clock-sync exchanges answered, by path.
    package typealias ClockSyncCounts = SimulatedSpeaker.ClockSyncCounts

    package private(set) var service: Service = .serving
    package private(set) var power: Power = .on
    package private(set) var links: [UInt64: Link] = [:]
    private var lastLink: UInt64 = 0
    package private(set) var clock: Clock = .running(shift: 0)
    /// The clock map a controller installed (forgotten when the power goes).
    package private(set) var clockMap: ClockMap?
    package private(set) var clockSyncs = ClockSyncCounts()
    /// How many times each stream was opened on this speaker (it joins a stream again after a lost link or an outage).
    package private(set) var streamParts: [UInt32: Int] = [:]

    package init() {}

    package var isShutDown: Bool { service == .shutDown }
    package var isPoweredOff: Bool { power == .off }

    /// The DAC clock's shift back by the stalls so far (ns).
    package var stallShift: Int64 {
        switch clock {
        case let .running(shift), let .stalled(_, _, shift): shift
        }
    }

    // MARK: Events

    /// A controller connects: the link's number, or nil when the speaker is shut down or off (the link is closed).
    package mutating func connect() -> UInt64? {
        guard service == .serving, power == .on else { return nil }
        lastLink += 1
        links[lastLink] = .greeting
        return lastLink
    }

    /// The link's hello chose `version` (a link gone changes nothing).
    package mutating func greeted(_ link: UInt64, version: UInt8) {
        guard links[link] != nil else { return }
        links[link] = .speaking(version: version)
    }

    /// The version link `link` speaks (nil: before its hello, or gone).
    package func version(of link: UInt64) -> UInt8? {
        guard case let .speaking(version)? = links[link] else { return nil }
        return version
    }

    /// The link closed.
    package mutating func disconnected(_ link: UInt64) {
        links[link] = nil
    }

    /// `shutdown()`: no link is accepted any more (the shell closes those open).
    package mutating func shutDown() {
        service = .shutDown
    }

    /// The power goes: no link, discovery, audio or clock sync is answered, and the clock map is forgotten.
    package mutating func powerOff() {
        power = .off
        clockMap = nil
    }

    /// The power is back.
    package mutating func powerOn() {
        power = .on
    }

    /// Whether discovery and audio are answered.
    package var isListening: Bool { power == .on }

    /// A controller installs a clock map (a speaker off answers no request, so it never gets one).
    package mutating func installClockMap(_ map: ClockMap) {
        clockMap = map
    }

    /// A `clockSync` request on a control link.
    package mutating func controlClockSync() {
        clockSyncs.control += 1
    }

    /// A clock-sync datagram (version 4), its t2 the kernel's receive time or not: whether it is answered (not when off
    /// or shut down).
    package mutating func clockSyncDatagram(kernelTimestamped: Bool) -> Bool {
        guard power == .on, service == .serving else { return false }
        clockSyncs.datagrams += 1
        if kernelTimestamped { clockSyncs.kernelTimestamped += 1 }
        return true
    }

    /// A stream opens: which part of it this speaker plays (1 the first time; 2 on, after it joined again).
    package mutating func streamOpened(_ streamId: UInt32) -> Int {
        let part = (streamParts[streamId] ?? 0) + 1
        streamParts[streamId] = part
        return part
    }

    /// The DAC clock at true time `t`, given what it reads there without stalls (`unstalled`): the time it stopped at
    /// during a stall; after one, shifted back by every stall so far.
    package mutating func dacTime(atTrueTime t: UInt64, unstalled: UInt64) -> UInt64 {
        if case let .stalled(at, until, shift) = clock {
            if t < until { return at }
            clock = .running(shift: shift)
        }
        return unstalled &- UInt64(bitPattern: stallShift)
    }

    /// The clock stalls for `nanoseconds` of true time from `t` (where it reads `unstalled` without stalls), then runs
    /// on from where it stopped.
    package mutating func stall(for nanoseconds: UInt64, atTrueTime t: UInt64, unstalled: UInt64) {
        let at = dacTime(atTrueTime: t, unstalled: unstalled)
        clock = .stalled(at: at, until: t &+ nanoseconds, shift: stallShift &+ Int64(bitPattern: nanoseconds))
    }
}
