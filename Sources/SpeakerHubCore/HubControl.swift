import OrderedJSON
import Synchronization

/// A JSON-RPC client of the hub (one WebSocket, or one client address's HTTP POSTs): its address and the hub
/// session it controls playback with. The session is opened when the client first controls something (reading holds
/// none), at the default priority, and reopened if it expired; `HubAPI.close(_:)` closes it.
public final class HubRPCPeer: Sendable {
    public let client: String
    let session = Mutex<UInt64?>(nil)

    public init(client: String) { self.client = client }

    /// This client's identity for `HubEvents.subscribe(peer:)` and `HubNotification.except`.
    public var key: ObjectIdentifier { ObjectIdentifier(self) }

    /// The hub session this client holds (nil before it controlled anything).
    public var sessionID: UInt64? { session.withLock { $0 } }
}

/// A speaker's volume as announced: its level and mute (nil when unknown).
struct HubVolume: Equatable {
    var level: Int
    var muted: Bool?

    /// Tuneup's shape (`Hub.GetStatus`, `Client.GetInfo`): the level 0...50.
    var json: OrderedJSON { .object([("level", .int(level)), ("muted", muted.map { .bool($0) } ?? .null)]) }
    /// Snapcast's shape (`Client.OnVolumeChanged`): the percent (docs/hub.md §9), unknown mute as not muted.
    var snapcastJSON: OrderedJSON { Snapcast.volumeJSON(volume: level, muted: muted ?? false) }
}

/// The speakers in the playback session before a call (what it changed is announced after it).
struct Changes {
    let members: [UInt64]
    init(_ api: HubAPI) async { members = await api.speakers.sessionMembers() }
}

extension HubAPI {
    // MARK: Sessions of JSON-RPC clients

    /// `peer`'s session: touched, or opened (again) when it has none or it expired.
    func session(for peer: HubRPCPeer) throws(HubError) -> UInt64 {
        let t = now()
        if let sid = peer.sessionID, (try? sessions.touch(sid, now: t)) != nil { return sid }
        let sid = try sessions.open(priority: HubRequest.defaultPriority, client: peer.client, now: t)
        peer.session.withLock { $0 = sid }
        return sid
    }

    /// Closes `peer`'s session (its WebSocket closed).
    public func close(_ peer: HubRPCPeer) {
        if let sid = peer.session.withLock({ s in defer { s = nil }; return s }) { sessions.close(sid) }
    }

    /// Runs a v1 call for `peer` (one at a time with every other call) and announces what it changed.
    func perform(_ call: HubCall, for peer: HubRPCPeer) async throws -> HubAnswer {
        let sid = try session(for: peer)
        let before = await Changes(self)
        let answer = try await run(HubRequest(call: call, session: sid), client: peer.client)
        await announce(call, since: before)
        return answer
    }

    // MARK: What JSON-RPC adds to the v1 calls

    /// Moves the playing or paused hub media to `position`.
    func seek(to position: Duration, for peer: HubRPCPeer) async throws {
        let sid = try session(for: peer)
        let playback = await player.playback()
        guard playback.state == .playing || playback.state == .paused else {
            throw HubError(.notPlaying, "nothing is playing or paused, so there is nothing to seek in")
        }
        try sessions.checkControl(sid)
        guard case let .media(item)? = playback.item else {
            throw HubError(.notSeekable, "web media cannot seek (it is streamed as it comes)")
        }
        if item.duration > 0, position >= .seconds(item.duration) {
            throw HubError(.notSeekable, "position \(Self.seconds(position)) s is at or beyond the end of '\(item.title)' (\(item.duration) s)")
        }
        try await player.seek(to: position)
        sessions.takePlayback(sid)
        await announceState(force: true)
    }

    func setMute(_ muted: Bool, of id: UInt64) async throws {
        _ = try await device(id)
        try await speakers.setMute(muted, of: id)
        await announceVolumes(of: [id])
    }

    func setGroup(_ name: String, members ids: [UInt64]) async throws {
        let list = try await speakers.devices()
        if let unknown = ids.first(where: { id in !list.contains { $0.deviceID == id } }) { throw Self.deviceNotFound(unknown) }
        if let off = list.first(where: { !$0.connected && ids.contains($0.deviceID) }) { throw unavailable(off) }
        try await speakers.setGroup(name, members: ids)
        events.publish(HubNotification("Group.OnChanged", .object([("groups", Self.groupsJSON(try await speakers.devices()))])))
    }

    // MARK: Notifications

    /// Announces what `call` changed: volumes, the player's state, the playback session's members.
    func announce(_ call: HubCall, since before: Changes) async {
        switch call {
        case .setVolume: await announceVolumes(of: nil)
        case let .setVolumeDevice(id, _): await announceVolumes(of: [id])
        case .playHubMedia, .playWebMedia, .pausePlay, .stopPlay, .resumeHubMedia, .removeDeviceFromSession:
            await announceState(force: true)
        default: break
        }
        let after = await speakers.sessionMembers()
        for id in after where !before.members.contains(id) {
            events.publish(HubNotification("Client.OnActiveChanged", .object([("id", .string(String(id))), ("active", .bool(true))])))
        }
        for id in before.members where !after.contains(id) {
            events.publish(HubNotification("Client.OnActiveChanged", .object([("id", .string(String(id))), ("active", .bool(false))])))
        }
    }

    /// `Client.OnVolumeChanged` for speakers `ids` (every speaker: nil), as the speakers report them now (`except`:
    /// the client whose Snapcast request made the change is not told, §9.4).
    func announceVolumes(of ids: [UInt64]?, except: HubRPCPeer? = nil) async {
        guard let list = try? await speakers.devices() else { return }
        let mutes = (try? await speakers.mutes()) ?? [:]
        for d in list where d.connected && ids?.contains(d.deviceID) ?? true {
            announceVolume(d.deviceID, HubVolume(level: d.volume, muted: mutes[d.deviceID]), except: except)
        }
    }

    /// `Client.OnVolumeChanged` for one speaker (`onlyIfChanged`: unless it is what was last announced).
    func announceVolume(_ id: UInt64, _ volume: HubVolume, onlyIfChanged: Bool = false, except: HubRPCPeer? = nil) {
        if onlyIfChanged, announcedVolumes[id] == volume { return }
        announcedVolumes[id] = volume
        events.publish(HubNotification("Client.OnVolumeChanged", .object([("id", .string(String(id))), ("volume", volume.snapcastJSON)]),
                                       except: except?.key))
    }

    // MARK: What the speakers report by themselves

    /// Follows `speakers.changes()` until it ends or the task is cancelled: a volume set by any controller (the
    /// speaker's own event) is `Client.OnVolumeChanged` unless it is what was announced last; a speaker reached again
    /// is `Client.OnConnect`; a lost one `Client.OnDisconnect` and `Server.OnError`. Each runs between calls.
    public nonisolated func followSpeakers() -> Task<Void, Never> {
        Task { [weak self] in
            guard let stream = await self?.speakers.changes() else { return }
            for await change in stream {
                guard let self else { return }
                await self.speakersChanged(change)
            }
        }
    }

    func speakersChanged(_ change: HubSpeakerChange) async {
        await enter()
        defer { leave() }
        switch change {
        case let .volume(id, level, muted):
            announceVolume(id, HubVolume(level: level, muted: muted), onlyIfChanged: true)
        case let .connected(id):
            await speakerReached(id)
        case let .lost(id, reason):
            await speakerLeft(id, reason: reason)
            announceError(source: "speaker", message: "speaker \(id) was lost: \(reason)", client: id)
        }
    }

    /// `Player.OnStateChanged` with the player as it is (`force`: even when its state and item are as last
    /// announced, e.g. after a seek); starts or stops the position ticker.
    func announceState(force: Bool) async {
        let playback = await player.playback()
        let key = Self.stateKey(playback)
        if force || key != lastAnnounced {
            lastAnnounced = key
            events.publish(HubNotification("Player.OnStateChanged", Self.playerJSON(playback)))
            events.publish(HubNotification("Stream.OnUpdate", .object([("id", .string(Snapcast.streamID)), ("stream", Snapcast.stream(playback))])))
        }
        // Nothing streams: no player rejoins a speaker that came back.
        if playback.state != .playing && playback.state != .paused { returnAnnounced = returnAnnounced.filter { $0.value == .byPlayer } }
        updateTicker(playback.state)
    }

    /// The player's own events (`tuneup speaker hub` follows the controller's player): a state it reached by itself
    /// (the end of the item, a stop by another controller).
    public func playerChanged() async {
        await announceState(force: false)
    }

    /// The player gives a speaker the stream (at a play, added during one, or rejoined after it was lost):
    /// `Client.OnConnect`, but once for a return the hub already announced when it reached the speaker again.
    public func speakerJoined(_ id: UInt64) async {
        if returnAnnounced[id] == .byHub {
            returnAnnounced[id] = nil
            return
        }
        if lostSpeakers.remove(id) != nil { returnAnnounced[id] = .byPlayer }
        await announceClient("Client.OnConnect", id)
    }

    /// `Client.OnConnect` or `Client.OnDisconnect` in Snapcast's shape: `{"client","id"}`, the speaker as it is now.
    func announceClient(_ method: String, _ id: UInt64) async {
        var fields: [(String, OrderedJSON)] = []
        if let client = await snapcastClientJSON(id) { fields.append(("client", client)) }
        fields.append(("id", .string(String(id))))
        events.publish(HubNotification(method, .object(fields)))
    }

    /// The hub reaches a speaker again (or for the first time): `Client.OnConnect`, but once for a return the player
    /// already announced by rejoining it to the stream. One of the stream (the player plays or is paused, it is in
    /// the playback session) is to be rejoined by the player too: that report is then not announced again.
    func speakerReached(_ id: UInt64) async {
        if returnAnnounced[id] == .byPlayer {
            returnAnnounced[id] = nil
            return
        }
        if lostSpeakers.remove(id) != nil {
            let state = await player.playback().state
            if state == .playing || state == .paused, await speakers.sessionMembers().contains(id) { returnAnnounced[id] = .byHub }
        }
        await announceClient("Client.OnConnect", id)
    }

    /// A speaker's link was lost.
    /// A speaker's link was lost: `Client.OnDisconnect` (the reason is `Server.OnError`'s).
    public func speakerLeft(_ id: UInt64, reason: String) async {
        lostSpeakers.insert(id)
        returnAnnounced[id] = nil
        await announceClient("Client.OnDisconnect", id)
    }

    /// The player stopped the playback by itself before its end (`SpeakerController.playbackInterruption`): every
    /// speaker was lost, or another controller took the stream over. `Player.OnInterrupted` with the reason and the
    /// player's line (the state it leaves, stopped, is `Player.OnStateChanged`): not an end.
    public func playbackInterrupted(_ reason: HubInterruption, message: String) {
        events.publish(HubNotification("Player.OnInterrupted", .object([("reason", .string(reason.rawValue)), ("message", .string(message))])))
    }

    /// An error the clients should see (a source that failed, a speaker's error): `Server.OnError`.
    public func announceError(source: String, message: String, client: UInt64? = nil) {
        var fields: [(String, OrderedJSON)] = [("source", .string(source)), ("message", .string(message))]
        if let client { fields.append(("id", .string(String(client)))) }
        events.publish(HubNotification("Server.OnError", .object(fields)))
    }

    // MARK: The position ticker

    /// While playing, `Player.OnPosition` once a second on the hub's clock (nothing runs while nothing plays).
    func updateTicker(_ state: HubPlayerState) {
        if state == .playing {
            guard ticker == nil, let sleep else { return }
            ticker = Task { [weak self] in
                while true {
                    do { try await sleep(.seconds(1)) } catch { return }
                    guard let self, await self.tick() else { return }
                }
            }
        } else {
            ticker?.cancel()
            ticker = nil
        }
    }

    /// One second: the position while playing (true), else the state it reached (false: the ticker ends).
    func tick() async -> Bool {
        guard !Task.isCancelled else { return false }
        let playback = await player.playback()
        guard playback.state == .playing else {
            ticker = nil
            await announceState(force: false)
            return false
        }
        events.publish(HubNotification("Player.OnPosition", Self.positionJSON(playback)))
        return true
    }

    // MARK: The JSON shapes (docs/hub.md §8)

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds / 1_000_000_000_000_000) / 1000
    }

    static func stateName(_ state: HubPlayerState) -> String {
        switch state {
        case .initialized: "idle"
        case .playing: "playing"
        case .paused: "paused"
        case .stopped: "stopped"
        }
    }

    static func stateKey(_ p: HubPlayback) -> String {
        let item: String = switch p.item {
        case let .media(m)?: "m\(m.persistentID)"
        case let .web(url)?: "w" + url
        case nil: ""
        }
        return stateName(p.state) + " " + item
    }

    static func positionJSON(_ p: HubPlayback) -> OrderedJSON {
        var duration: OrderedJSON = .null
        if case let .media(m)? = p.item, m.duration > 0 { duration = .int(m.duration) }
        return .object([("position", p.elapsed.map { .double(seconds($0)) } ?? .null), ("duration", duration)])
    }

    static func playerJSON(_ p: HubPlayback) -> OrderedJSON {
        var media: OrderedJSON = .null, url: OrderedJSON = .null, duration: OrderedJSON = .null
        switch p.item {
        case let .media(m)?:
            media = mediaJSON(m)
            if m.duration > 0 { duration = .int(m.duration) }
        case let .web(u)?: url = .string(u)
        case nil: break
        }
        return .object([
            ("state", .string(stateName(p.state))), ("position", p.elapsed.map { .double(seconds($0)) } ?? .null),
            ("duration", duration), ("media", media), ("url", url),
        ])
    }

    static func mediaJSON(_ m: HubMediaItem) -> OrderedJSON {
        .object([
            ("id", .string(String(m.persistentID))), ("title", .string(m.title)), ("artist", .string(m.artist)),
            ("album", .string(m.albumTitle)), ("duration", .int(m.duration)),
        ])
    }

    static func volumeJSON(_ d: HubDevice, muted: Bool?) -> OrderedJSON {
        HubVolume(level: d.volume, muted: muted).json
    }

    /// A wall-clock time (since the Unix epoch) as Snapcast's `lastSeen`: `{"sec","usec"}`.
    static func timeJSON(_ t: Duration) -> OrderedJSON {
        .object([("sec", .int(Int(t.components.seconds))), ("usec", .int(Int(t.components.attoseconds / 1_000_000_000_000)))])
    }

    static func clientJSON(_ d: HubDevice, muted: Bool?) -> OrderedJSON {
        .object([
            ("id", .string(String(d.deviceID))), ("name", .string(d.deviceName)), ("model", .string(d.modelName)),
            ("host", .object([("ip", .string(d.ipAddress)), ("port", .int(d.port)), ("mac", .string(d.macAddress))])),
            ("version", .string(d.version)), ("volume", volumeJSON(d, muted: muted)), ("active", .bool(d.active)),
            ("playing", .bool(d.isPlaying)), ("group", d.groupID == 0 ? .null : .string(d.groupName)),
            ("connected", .bool(d.connected)), ("lastSeen", d.lastSeen.map(timeJSON) ?? .null),
        ])
    }

    /// The named groups (speakers in none are left out), in list order.
    static func groupsJSON(_ devices: [HubDevice]) -> OrderedJSON {
        var order: [String] = []
        var members: [String: [HubDevice]] = [:]
        for d in devices where d.groupID != 0 {
            if members[d.groupName] == nil { order.append(d.groupName) }
            members[d.groupName, default: []].append(d)
        }
        return .array(order.map { name in
            .object([
                ("id", .string(String(members[name]![0].groupID))), ("name", .string(name)),
                ("clients", .array(members[name]!.map { .string(String($0.deviceID)) })),
            ])
        })
    }
}

/// Why the player stopped a playback by itself (`Player.OnInterrupted`'s `reason`).
public enum HubInterruption: String, Sendable {
    /// Every speaker of the playback was lost and none came back in time.
    case speakersLost
    /// Another controller played its own stream on every speaker.
    case takenOver
}
