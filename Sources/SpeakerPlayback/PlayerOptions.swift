import Speaker

/// How the player streams.
public struct PlayerOptions: Sendable {
    /// How far ahead of their presentation time packets are sent: the latency from play to sound, and the jitter the
    /// speakers absorb.
    public var buffer: Duration
    /// How often the streaming loop wakes (at most a quarter of `buffer`): each wake sends every packet due within
    /// `buffer`, so a longer tick means fewer wake-ups (the controller's CPU), not later audio.
    public var tick: Duration
    /// How long play waits for a speaker's clock to be synchronised.
    public var syncTimeout: Duration
    /// Reconnect to a speaker whose link was lost (a TCP session), and let it rejoin.
    public var reconnect: Bool
    public var reconnectInterval: Duration
    /// How the audio datagrams carry the samples: PCM (every speaker), or FLAC (lossless; every speaker of the
    /// session must speak protocol version 3, docs/speaker-protocol.md §7.2).
    public var encoding: AudioEncoding
    /// How long after the last frame's time the player waits for the speakers that did not report it heard yet (a
    /// speaker whose output comes later, a loaded machine); then they are stopped and the playback ends.
    public var endGrace: Duration
    /// How long a playback whose every speaker was lost waits for one to come back (reconnected) before it stops.
    public var lostTimeout: Duration

    public init(buffer: Duration = .milliseconds(200), tick: Duration = .milliseconds(50), syncTimeout: Duration = .seconds(3),
                reconnect: Bool = true, reconnectInterval: Duration = .milliseconds(500), encoding: AudioEncoding = .pcm,
                endGrace: Duration = .seconds(2), lostTimeout: Duration = .seconds(3)) {
        self.buffer = buffer
        self.tick = tick
        self.syncTimeout = syncTimeout
        self.reconnect = reconnect
        self.reconnectInterval = reconnectInterval
        self.encoding = encoding
        self.endGrace = endGrace
        self.lostTimeout = lostTimeout
    }

    /// How long the streaming loop sleeps between wakes: `tick`, at most a quarter of `buffer`.
    public var wakeInterval: Duration { min(tick, buffer / 4) }
}
