import Speaker
import SpeakerPlayback
import Transport

/// A controller over many speakers (issue 10 §1): the device list with DeviceInfo by index, by group and member
/// index, by id; volume of one or all (the average reported); groups by name; the playback session's members.
///
/// The list is in the order the speakers were added; `refresh()` re-reads every DeviceInfo and the lookups use what
/// it read last. Every lookup that finds nothing throws `SpeakerSessionError(.unknownDevice)` naming what there is;
/// a value out of range is refused before anything is sent.
///
/// Playback (the player API): the speakers added to the playback session (`addToSession`) are the player's members;
/// `play(_:)` streams a `PCMSource` to them in sync, `pause`/`resume`/`stop` control it, `playerState`, `elapsed` and
/// `playerEvents()` report it. With no stream of its own, `pause`/`resume`/`stop` act on the stream the speakers play
/// (started by another controller), which follows them through the speakers' events.
public actor SpeakerController {
    private var sessions: [SpeakerSession]
    private var infos: [UInt64: DeviceInfo] = [:]
    private var members: [UInt64] = []
    private var playerInstance: SpeakerPlayer?
    /// How the player streams (set before the first `addToSession`: `setPlayerOptions`).
    public private(set) var playerOptions = PlayerOptions()
    /// Sees every audio and clock datagram of the player (`setDatagramTap`: a capture).
    public private(set) var datagramTap: SpeakerDatagramTap?

    /// Gives the player made from now on `tap` (every audio and clock datagram it sends or receives).
    public func setDatagramTap(_ tap: SpeakerDatagramTap?) { datagramTap = tap }

    /// How a speaker lost during playback is opened again (`setReopen`): the way it was opened first (the device
    /// registry's: its link conditions and capture apply to the new link too); nil: TCP to where its session was
    /// opened, when that is known.
    public private(set) var reopen: SpeakerPlayer.Reconnect?

    /// Sets how the player made from now on reopens a lost speaker.
    public func setReopen(_ reopen: SpeakerPlayer.Reconnect?) { self.reopen = reopen }

    /// Sets how the player streams; refused once the player exists (after the first `addToSession`).
    public func setPlayerOptions(_ options: PlayerOptions) throws(SpeakerSessionError) {
        guard playerInstance == nil else { throw SpeakerSessionError(.invalidArgument, "player options are set before the first speaker joins the session") }
        playerOptions = options
    }

    /// A controller over open sessions (their DeviceInfo is read by `refresh()`).
    public init(sessions: [SpeakerSession]) {
        var seen = Set<UInt64>()
        self.sessions = sessions.filter { seen.insert($0.deviceId).inserted }
    }

    /// Connects to every `HOST:PORT`, says hello and reads every DeviceInfo. On a failure the sessions already
    /// opened are closed and the error names the speaker.
    public static func connect(_ endpoints: [(host: String, port: UInt16)], options: RequestOptions = RequestOptions()) async throws -> SpeakerController {
        try await open(endpoints) { endpoint in
            try await SpeakerSession.connect(host: endpoint.host, port: endpoint.port, options: options)
        }
    }

    /// Opens a session for every item with `open`, in order, and reads every DeviceInfo. On a failure the sessions
    /// already opened are closed and the failure is rethrown.
    public static func open<Items: Sequence>(
        _ items: Items, with open: (Items.Element) async throws -> SpeakerSession
    ) async throws -> SpeakerController {
        var opened: [SpeakerSession] = []
        do {
            for item in items {
                opened.append(try await open(item))
            }
            let controller = SpeakerController(sessions: opened)
            _ = try await controller.refresh()
            return controller
        } catch {
            for session in opened { await session.close() }
            throw error
        }
    }

    /// Re-reads every speaker's DeviceInfo; returns the list in order.
    @discardableResult
    public func refresh() async throws -> [DeviceInfo] {
        for session in sessions {
            infos[session.deviceId] = try await session.deviceInfo()
        }
        return devices
    }

    /// The speakers' DeviceInfo, in order (as last read).
    public var devices: [DeviceInfo] { sessions.compactMap { infos[$0.deviceId] } }

    /// The number of speakers.
    public var count: Int { sessions.count }

    /// The session of speaker `id`.
    public func session(id: UInt64) throws(SpeakerSessionError) -> SpeakerSession {
        guard let s = sessions.first(where: { $0.deviceId == id }) else {
            throw SpeakerSessionError(.unknownDevice, "there is no speaker with id \(id); known: \(knownIds)")
        }
        return s
    }

    /// DeviceInfo of speaker `index` (0-based, in list order).
    public func info(index: Int) throws(SpeakerSessionError) -> DeviceInfo {
        let list = devices
        guard list.indices.contains(index) else {
            throw SpeakerSessionError(.unknownDevice, list.isEmpty ? "there is no speaker \(index); no speakers are known"
                : "there is no speaker \(index); speakers are 0...\(list.count - 1)")
        }
        return list[index]
    }

    /// DeviceInfo of speaker `id`.
    public func info(id: UInt64) throws(SpeakerSessionError) -> DeviceInfo {
        guard let info = infos[id], sessions.contains(where: { $0.deviceId == id }) else {
            throw SpeakerSessionError(.unknownDevice, "there is no speaker with id \(id); known: \(knownIds)")
        }
        return info
    }

    /// The groups by name (speakers in no group are left out), each with its members in list order.
    public var groups: [(name: String, id: UInt64, members: [DeviceInfo])] {
        var order: [String] = []
        var byName: [String: [DeviceInfo]] = [:]
        for info in devices where info.groupId != 0 {
            let name = info.groupName.value
            if byName[name] == nil { order.append(name) }
            byName[name, default: []].append(info)
        }
        return order.map { ($0, byName[$0]![0].groupId, byName[$0]!) }
    }

    /// DeviceInfo of member `member` (0-based) of the group named `group`.
    public func info(group: String, member: Int) throws(SpeakerSessionError) -> DeviceInfo {
        guard let found = groups.first(where: { $0.name == group }) else {
            let names = groups.map { "'\($0.name)'" }
            throw SpeakerSessionError(.unknownDevice, "there is no group '\(group)'" + (names.isEmpty ? "; no groups exist" : "; groups: \(names.joined(separator: ", "))"))
        }
        guard found.members.indices.contains(member) else {
            throw SpeakerSessionError(.unknownDevice, "group '\(group)' has no member \(member); members are 0...\(found.members.count - 1)")
        }
        return found.members[member]
    }

    // MARK: Volume

    /// Sets speaker `id`'s volume (0...50).
    public func setVolume(_ volume: Int, of id: UInt64) async throws {
        try Self.checkVolume(volume)
        let s = try session(id: id)
        try await s.setVolume(volume)
        infos[id] = try await s.deviceInfo()
    }

    /// Sets every speaker's volume (0...50); returns the average afterwards.
    @discardableResult
    public func setVolumeAll(_ volume: Int) async throws -> Double {
        try Self.checkVolume(volume)
        for s in sessions { try await s.setVolume(volume) }
        try await refresh()
        return averageVolume
    }

    /// The average volume of the speakers (0 with none), as last read.
    public var averageVolume: Double {
        let list = devices
        guard !list.isEmpty else { return 0 }
        return Double(list.map { Int($0.volume.value) }.reduce(0, +)) / Double(list.count)
    }

    /// Mutes or unmutes speaker `id` (unmute brings its level back).
    public func setMute(_ muted: Bool, of id: UInt64) async throws {
        let s = try session(id: id)
        try await s.setMute(muted)
        infos[id] = try await s.deviceInfo()
    }

    /// Renames speaker `id`.
    public func rename(_ id: UInt64, to name: String) async throws {
        let s = try session(id: id)
        try await s.setName(name)
        infos[id] = try await s.deviceInfo()
    }

    // MARK: Groups

    /// Puts the speakers `ids` in the group `name` and returns its id: an existing group's id, or else the id of
    /// the first speaker of `ids` (the group's first member). Refused before sending for an empty name or list or
    /// an unknown id.
    @discardableResult
    public func joinGroup(named name: String, ids: [UInt64]) async throws -> UInt64 {
        do { _ = try GroupAssignment.name(name) } catch { throw SpeakerSessionError(.invalidArgument, error.message) }  // the one rule
        guard let first = ids.first else { throw SpeakerSessionError(.invalidArgument, "no speakers given to join group '\(name)'") }
        let targets = try ids.map { id throws(SpeakerSessionError) in try session(id: id) }
        let groupId = groups.first(where: { $0.name == name })?.id ?? first
        for s in targets {
            try await s.joinGroup(id: groupId, name: name)
            infos[s.deviceId] = try await s.deviceInfo()
        }
        return groupId
    }

    /// Takes speaker `id` out of its group (its group name becomes "harman").
    public func leaveGroup(_ id: UInt64) async throws {
        let s = try session(id: id)
        try await s.leaveGroup()
        infos[id] = try await s.deviceInfo()
    }

    // MARK: The playback session (bookkeeping)

    /// The ids of the speakers in the playback session, in the order they were added.
    public var sessionMembers: [UInt64] { members }

    /// Adds speaker `id` to the playback session (it joins: `active`); during playback it joins the stream in sync.
    public func addToSession(_ id: UInt64) async throws {
        let s = try session(id: id)
        guard !members.contains(id) else { return }
        try await s.joinSession()
        members.append(id)
        let info = try await s.deviceInfo()
        infos[id] = info
        try await player().add(s, volume: Int(info.volume.value))
    }

    /// Adds every speaker to the playback session (the later seed's "all speakers added at start").
    public func addAllToSession() async throws {
        for s in sessions { try await addToSession(s.deviceId) }
    }

    /// Removes speaker `id` from the playback session.
    public func removeFromSession(_ id: UInt64) async throws {
        let s = try session(id: id)
        guard members.contains(id) else {
            throw SpeakerSessionError(.invalidArgument, "speaker \(id) is not in the playback session")
        }
        await playerInstance?.forget(id)
        await playerInstance?.remove(id, stopIfLast: true)
        try await s.leaveSession()
        members.removeAll { $0 == id }
        infos[id] = try await s.deviceInfo()
    }

    // MARK: Playback (the player API)

    private func player() throws -> SpeakerPlayer {
        if let playerInstance { return playerInstance }
        do {
            let p = try SpeakerPlayer(options: playerOptions, reconnect: reopen, onReconnect: { [weak self] s in await self?.replace(s) },
                                      datagramTap: datagramTap)
            playerInstance = p
            return p
        } catch let error as TransportError {
            throw SpeakerSessionError.transport(error, while: "cannot open the audio socket")
        }
    }

    /// A speaker reconnected after its link was lost: its new session replaces the old one.
    private func replace(_ session: SpeakerSession) async {
        if let i = sessions.firstIndex(where: { $0.deviceId == session.deviceId }) {
            let old = sessions[i]
            sessions[i] = session
            await old.close()
        } else {
            sessions.append(session)
        }
        if !members.contains(session.deviceId) { members.append(session.deviceId) }
        infos[session.deviceId] = try? await session.deviceInfo()
    }

    /// A speaker reached again after its link was lost (the hub reconnects every speaker in the background):
    /// `session` replaces its old one; one reached for the first time (it was off when the hub started) joins the
    /// list at its end. The playback session's members are unchanged.
    public func reconnected(_ session: SpeakerSession) async {
        if let i = sessions.firstIndex(where: { $0.deviceId == session.deviceId }) {
            let old = sessions[i]
            sessions[i] = session
            if old !== session { await old.close() }
        } else {
            sessions.append(session)
        }
        infos[session.deviceId] = try? await session.deviceInfo()
    }

    /// Plays `source` from `from` seconds on the speakers of the playback session, in sync; returns once it plays.
    /// - Throws: `SpeakerSessionError` (`.invalidArgument`: no speaker in the session, a bad `from`).
    public func play(_ source: any PCMSource, title: String = "", kind: StreamSource = .localFile, from: Double = 0) async throws {
        try await player().play(source, title: title, kind: kind, from: from)
    }

    /// Pauses the playback: this controller's stream, or else the one the speakers play.
    /// - Throws: `SpeakerSessionError(.invalidArgument)` when nothing plays.
    public func pause() async throws {
        if let p = playerInstance, await p.state == .playing { return try await p.pause() }
        try await remote(.playing, "nothing is playing") { s, id in try await s.pause(streamId: id) }
    }

    /// Resumes a paused playback: this controller's, or the speakers'.
    public func resume() async throws {
        if let p = playerInstance, await p.state == .paused { return try await p.resume() }
        try await remote(.paused, "nothing is paused") { s, id in try await s.resume(streamId: id) }
    }

    /// Stops the playback: this controller's, or the speakers'.
    public func stop() async throws {
        if let p = playerInstance, await p.streamId != 0 { return await p.stop() }
        try await remote(nil, "nothing is playing or paused") { s, id in try await s.stop(streamId: id) }
    }

    /// Stops this controller's own stream, if it has one (never another controller's).
    public func stopOwnPlayback() async {
        await playerInstance?.stop()
    }

    /// Sends `body` to every speaker whose status shows a stream (in `state`, or playing or paused).
    private func remote(_ state: PlayerState?, _ none: String, _ body: (SpeakerSession, UInt32) async throws -> Void) async throws {
        var acted = 0
        for s in sessions {
            let status = try await s.status()
            let matches = state.map { status.state == $0 } ?? (status.state == .playing || status.state == .paused)
            guard status.streamId != 0, matches else { continue }
            try await body(s, status.streamId)
            acted += 1
        }
        guard acted > 0 else { throw SpeakerSessionError(.invalidArgument, none) }
    }

    /// The player's state (initialized before any playback).
    public var playerState: PlayerState {
        get async { await playerInstance?.state ?? .initialized }
    }

    /// Why the last playback stopped by itself before its end (every speaker lost, the stream taken over by another
    /// controller); nil after its end, a stop, or while it plays.
    public var playbackInterruption: SpeakerSessionError? {
        get async { await playerInstance?.interruption }
    }

    /// What the player did for lost-packet recovery (docs/speaker-protocol.md §7.1).
    public var recoveryStatistics: PlayerRecoveryStatistics {
        get async { await playerInstance?.recoveryStatistics ?? PlayerRecoveryStatistics() }
    }

    /// Seconds of the stream heard (nil when nothing plays or is paused).
    public var elapsed: Double? {
        get async { await playerInstance?.elapsed }
    }

    /// The player's events: state changes, playback time every second, the end, speakers joining and lost.
    public func playerEvents() async throws -> AsyncStream<PlayerEvent> {
        try await player().playerEvents()
    }

    /// Closes every session (a stream of this controller is stopped first).
    public func close() async {
        await playerInstance?.close()
        for s in sessions { await s.close() }
    }

    private var knownIds: String {
        sessions.isEmpty ? "none" : sessions.map { String($0.deviceId) }.joined(separator: ", ")
    }

    static func checkVolume(_ volume: Int) throws(SpeakerSessionError) {
        guard (Int(SpeakerVolume.range.lowerBound)...Int(SpeakerVolume.range.upperBound)).contains(volume) else {
            throw SpeakerSessionError(.invalidArgument, "volume \(volume) is outside 0...50")
        }
    }
}
