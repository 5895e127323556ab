/// The HKWHub v1 API over speakers, a player and a media list (docs/hub.md): every call's rules, sessions with
/// priorities, pre-emption and expiry on the injected clock, answers as published. No HTTP here: the router hands
/// each `/v1/NAME?QUERY` to `handle(name:query:)` and sends back its status and JSON.
///
/// Calls run one at a time, in arrival order, so a call's checks and its effects are never interleaved with another's.
public actor HubAPI {
    public let speakers: any HubSpeakers
    public let player: any HubPlayer
    public let media: any HubMediaSource
    let now: @Sendable () -> Duration
    /// The wall clock (time since the Unix epoch): how long ago a speaker's `lastSeen` was.
    let wallNow: @Sendable () -> Duration
    public internal(set) var sessions: HubSessions
    /// The machine the hub runs on, as Snapcast's `server.host` (docs/hub.md §9).
    public nonisolated let host: Snapcast.Host

    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// The notifications pushed to JSON-RPC clients (docs/hub.md §8).
    public nonisolated let events = HubEvents()
    /// Sleeps on the hub's clock (the position ticker's second); nil: no position updates.
    let sleep: (@Sendable (Duration) async throws -> Void)?
    var ticker: Task<Void, Never>?
    /// The player's state and item as last announced (`Player.OnStateChanged`).
    var lastAnnounced = ""
    /// Each speaker's volume and mute as last announced (`Client.OnVolumeChanged`): what a speaker reports of a
    /// change the hub made is not announced twice.
    var announcedVolumes: [UInt64: HubVolume] = [:]
    /// Speakers announced lost (`Client.OnDisconnect`) and not announced back since.
    var lostSpeakers: Set<UInt64> = []
    /// A speaker of the playback stream that comes back is reported twice: the hub reaches it again
    /// (`HubSpeakerChange.connected`) and the player rejoins it to the stream (`speakerJoined`), in either order. The
    /// first report is announced (`Client.OnConnect`) and noted here; the other one is not announced again.
    var returnAnnounced: [UInt64: SpeakerReturn] = [:]

    enum SpeakerReturn { case byHub, byPlayer }

    /// - Parameters:
    ///   - now: the hub's clock: time since any fixed origin (tests inject a manual one).
    ///   - sleep: a sleep on the same clock, for the position pushed every second while playing (nil: none).
    ///   - wallClock: the wall clock the speakers' `lastSeen` is on (time since the Unix epoch).
    public init(speakers: any HubSpeakers, player: any HubPlayer, media: any HubMediaSource, sessionTimeout: Duration = .seconds(3600),
                sessionCapacity: Int = 4096, sessionsPerClient: Int = 32, now: @escaping @Sendable () -> Duration,
                sleep: (@Sendable (Duration) async throws -> Void)? = nil, wallClock: @escaping @Sendable () -> Duration = HubWallClock.now,
                host: Snapcast.Host = .unnamed) {
        self.host = host
        self.speakers = speakers
        self.player = player
        self.media = media
        self.now = now
        self.wallNow = wallClock
        self.sleep = sleep
        self.sessions = HubSessions(timeout: sessionTimeout, capacity: sessionCapacity, perClient: sessionsPerClient)
    }

    /// A hub on `clock` (a `ContinuousClock` when serving, a manual one in tests).
    public init<C: Clock>(speakers: any HubSpeakers, player: any HubPlayer, media: any HubMediaSource, sessionTimeout: Duration = .seconds(3600),
                          sessionCapacity: Int = 4096, sessionsPerClient: Int = 32, clock: C) where C.Duration == Duration {
        let origin = clock.now
        self.init(speakers: speakers, player: player, media: media, sessionTimeout: sessionTimeout, sessionCapacity: sessionCapacity,
                  sessionsPerClient: sessionsPerClient, now: { origin.duration(to: clock.now) }, sleep: { try await clock.sleep(for: $0) })
    }

    /// Answers `/v1/NAME?QUERY`: never throws; a refusal is an answer with a 4xx or 5xx status.
    /// - Parameter client: the caller's address (its IP): sessions are bounded per client (`HubSessions.perClient`).
    public func handle(name: Substring, query: Substring?, client: String = "") async -> HubAnswer {
        let request: HubRequest
        do {
            request = try HubRequest(name: name, query: query)
        } catch {
            return error.answer
        }
        await enter()
        defer { leave() }
        do {
            let before = await Changes(self)
            let answer = try await run(request, client: client)
            await announce(request.call, since: before)
            return answer
        } catch let error as HubError {
            return error.answer
        } catch is CancellationError {
            return HubError(.speakerFailed, "the request was cancelled").answer
        } catch {
            return HubError(.speakerFailed, "\(error)").answer
        }
    }

    public func handle(name: String, query: String?, client: String = "") async -> HubAnswer {
        await handle(name: Substring(name), query: query.map { Substring($0) }, client: client)
    }

    /// What the control page shows: the speakers, the media, the player.
    public func overview() async -> (devices: [HubDevice], media: [HubMediaItem], playback: HubPlayback, error: String?) {
        var problem: String?
        let list: [HubDevice]
        do { list = try await speakers.devices() } catch { list = []; problem = "speakers: \(error)" }
        let items: [HubMediaItem]
        do { items = try await media.items() } catch { items = []; problem = (problem.map { $0 + "; " } ?? "") + "media: \(error)" }
        return (list, items, await player.playback(), problem)
    }

    // MARK: Calls

    func run(_ request: HubRequest, client: String) async throws -> HubAnswer {
        let t = now()
        if case let .initSession(priority) = request.call {
            let id = try sessions.open(priority: priority, client: client, now: t)
            return HubAnswer(json: .object([("SessionID", .string(String(id)))]))
        }
        if let spelled = request.unissuedSession { throw HubSessions.notFound(spelled: spelled) }
        guard let sid = request.sessionID else { throw HubError(.missingParameter, "parameter SessionID is missing") }
        try sessions.touch(sid, now: t)
        switch request.call {
        case .initSession:
            return .success
        case .closeSession:
            sessions.close(sid)
            return .success
        case .deviceCount:
            return HubAnswer(json: .object([("DeviceCount", .string(String(try await available().count)))]))
        case .deviceList:
            return HubAnswer(json: .object([("DeviceList", .array(try await available().map(\.json)))]))
        case let .deviceInfo(id):
            return HubAnswer(json: try await device(id).json)
        case let .addDeviceToSession(id):
            _ = try await device(id)
            try await speakers.addToSession(id)
            return .success
        case let .removeDeviceFromSession(id):
            _ = try await known(id)  // an unavailable speaker can leave the session
            try await speakers.removeFromSession(id)
            // The SDK's rule: with no speaker left in the session, playback stops.
            if await speakers.sessionMembers().isEmpty, [.playing, .paused].contains(await player.playback().state) {
                try await player.stop()
            }
            return .success
        case .setPartyMode:
            for d in try await available() { try await speakers.addToSession(d.deviceID) }
            return .success
        case .mediaList:
            return HubAnswer(json: .object([("MediaList", .array(try await media.items().map(\.json)))]))
        case let .playHubMedia(pid, target):
            let item = try await mediaItem(pid)
            try await play(.media(item), from: .zero, target: target, session: sid)
            return .success
        case let .playWebMedia(url, target):
            try await play(.web(url: url), from: .zero, target: target, session: sid)
            return .success
        case .pausePlay:
            try sessions.checkControl(sid)
            let now = await player.playback()
            guard now.state == .playing else {
                throw HubError(.notPlaying, "nothing is playing (the player is \(now.state.rawValue))")
            }
            // Web media cannot be resumed: pausing it stops it.
            if case .web = now.item { try await player.stop() } else { try await player.pause() }
            return .success
        case .stopPlay:
            // Safe with nothing playing, as the SDK's stop.
            let state = await player.playback().state
            guard state == .playing || state == .paused else { return .success }
            try sessions.checkControl(sid)
            try await player.stop()
            return .success
        case let .resumeHubMedia(pid, target):
            let item = try await mediaItem(pid)
            let now = await player.playback()
            guard now.state == .paused, case let .media(paused)? = now.item, paused.persistentID == pid else {
                throw HubError(.notResumable, "media \(pid) is not paused (the player is \(now.state.rawValue)); play it with play_hub_media")
            }
            try sessions.checkControl(sid)
            let before = await speakers.sessionMembers()
            try await choose(target)
            let members = await speakers.sessionMembers()
            guard !members.isEmpty else { throw noSpeakers() }
            if members == before {
                try await player.resume()
            } else {
                try await player.play(.media(item), from: now.elapsed ?? .zero, on: members)
            }
            sessions.takePlayback(sid)
            return .success
        case .playbackStatus:
            let now = await player.playback()
            let state = sessions.state(of: sid, player: now.state)
            let elapsed = state == .playing ? Int((now.elapsed ?? .zero).components.seconds) : -1
            return HubAnswer(json: .object([("PlaybackState", .string(state.rawValue)), ("TimeElapsed", .string(String(elapsed)))]))
        case .isPlaying:
            let playing = await player.playback().state == .playing
            return HubAnswer(json: .object([("IsPlaying", .string(playing ? "true" : "false"))]))
        case .getVolume:
            let list = try await available()
            let average = list.isEmpty ? 0 : (list.map(\.volume).reduce(0, +) * 2 + list.count) / (2 * list.count)
            return HubAnswer(json: .object([("Volume", .string(String(average)))]))
        case let .getVolumeDevice(id):
            return HubAnswer(json: .object([("Volume", .string(String(try await device(id).volume)))]))
        case let .setVolume(volume):
            try await speakers.setVolume(volume, of: nil)
            return .success
        case let .setVolumeDevice(id, volume):
            _ = try await device(id)
            try await speakers.setVolume(volume, of: id)
            return .success
        }
    }

    /// A play request: the priority rule first (a refused request changes nothing), then the speakers, then play.
    func play(_ item: HubPlayable, from position: Duration, target: HubTarget, session sid: UInt64) async throws {
        let state = await player.playback().state
        if state == .playing || state == .paused { try sessions.checkControl(sid) }
        try await choose(target)
        let members = await speakers.sessionMembers()
        guard !members.isEmpty else { throw noSpeakers() }
        try await player.play(item, from: position, on: members)
        sessions.takePlayback(sid)
    }

    /// Puts the playback session's speakers as `target` says.
    func choose(_ target: HubTarget) async throws {
        switch target {
        case .session:
            return
        case .party:
            for d in try await available() { try await speakers.addToSession(d.deviceID) }
        case let .selected(ids):
            let list = try await speakers.devices()
            if let unknown = ids.first(where: { id in !list.contains { $0.deviceID == id } }) { throw Self.deviceNotFound(unknown) }
            if let off = list.first(where: { !$0.connected && ids.contains($0.deviceID) }) { throw unavailable(off) }
            for id in await speakers.sessionMembers() where !ids.contains(id) { try await speakers.removeFromSession(id) }
            for id in ids { try await speakers.addToSession(id) }
        }
    }

    /// Speaker `id`, reachable now (else `SpeakerFailed`, saying it is unavailable).
    func device(_ id: UInt64) async throws -> HubDevice {
        let d = try await known(id)
        guard d.connected else { throw unavailable(d) }
        return d
    }

    /// Speaker `id` as the hub knows it, reachable or not.
    func known(_ id: UInt64) async throws -> HubDevice {
        guard let d = try await speakers.devices().first(where: { $0.deviceID == id }) else { throw Self.deviceNotFound(id) }
        return d
    }

    /// The speakers the hub reaches now (the v1 API's device list: an unavailable one is left out until it is back).
    func available() async throws -> [HubDevice] {
        try await speakers.devices().filter(\.connected)
    }

    /// The refusal of a request to a known speaker the hub does not reach now.
    func unavailable(_ d: HubDevice) -> HubError {
        let since = d.lastSeen.map { " for \(max(0, (wallNow() - $0).components.seconds)) s" } ?? ""
        return HubError(.speakerFailed, "speaker \(d.deviceID) ('\(HubQuery.shown(d.deviceName))') is unavailable (not reached\(since)); the hub reconnects it by itself")
    }

    func mediaItem(_ pid: UInt64) async throws -> HubMediaItem {
        guard let item = try await media.items().first(where: { $0.persistentID == pid }) else {
            throw HubError(.mediaNotFound, "there is no media item with PersistentID \(pid) (media_list lists them)")
        }
        return item
    }

    func noSpeakers() -> HubError {
        HubError(.noSpeakerInSession, "no speaker is in the playback session (add_device_to_session or set_party_mode first)")
    }

    static func deviceNotFound(_ id: UInt64) -> HubError {
        HubError(.deviceNotFound, "there is no speaker with DeviceID \(id) (device_list lists them)")
    }

    // MARK: One call at a time

    func enter() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func leave() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }
}
