import Speaker

/// A controller over many speakers (issue 10 §1): the device list with DeviceInfo by index, by group and member
/// index, by id; volume of one or all (the average reported); groups by name; the playback session's members.
///
/// The list is in the order the speakers were added; `refresh()` re-reads every DeviceInfo and the lookups use what
/// it read last. Every lookup that finds nothing throws `SpeakerSessionError(.unknownDevice)` naming what there is;
/// a value out of range is refused before anything is sent. Playback is not here yet: `addToSession` and
/// `removeFromSession` keep the books and tell the speakers (`joinSession`/`leaveSession`).
public actor SpeakerController {
    private var sessions: [SpeakerSession]
    private var infos: [UInt64: DeviceInfo] = [:]
    private var members: [UInt64] = []

    /// A controller over open sessions (their DeviceInfo is read by `refresh()`).
    public init(sessions: [SpeakerSession]) {
        var seen = Set<UInt64>()
        self.sessions = sessions.filter { seen.insert($0.deviceId).inserted }
    }

    /// Connects to every `HOST:PORT`, says hello and reads every DeviceInfo. On a failure the sessions already
    /// opened are closed and the error names the speaker.
    public static func connect(_ endpoints: [(host: String, port: UInt16)], options: RequestOptions = RequestOptions()) async throws -> SpeakerController {
        var opened: [SpeakerSession] = []
        do {
            for endpoint in endpoints {
                opened.append(try await SpeakerSession.connect(host: endpoint.host, port: endpoint.port, options: options))
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
        guard !name.isEmpty else { throw SpeakerSessionError(.invalidArgument, "a group name cannot be empty") }
        guard name != DeviceInfo.noGroupName.value else {
            throw SpeakerSessionError(.invalidArgument, "'\(name)' means no group; use leave to leave a group")
        }
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

    /// Adds speaker `id` to the playback session (it joins: `active`).
    public func addToSession(_ id: UInt64) async throws {
        let s = try session(id: id)
        guard !members.contains(id) else { return }
        try await s.joinSession()
        members.append(id)
        infos[id] = try await s.deviceInfo()
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
        try await s.leaveSession()
        members.removeAll { $0 == id }
        infos[id] = try await s.deviceInfo()
    }

    /// Closes every session.
    public func close() async {
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
