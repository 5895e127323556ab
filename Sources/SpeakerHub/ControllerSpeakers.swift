import SpeakerHubCore
import SpeakerSession

/// The hub's speakers: real (or simulated) speakers through a `SpeakerController`. Every device read refreshes the
/// speakers' DeviceInfo, so the hub answers what the speakers say now.
public struct ControllerSpeakers: HubSpeakers {
    public let controller: SpeakerController

    public init(_ controller: SpeakerController) { self.controller = controller }

    public func devices() async throws -> [HubDevice] {
        try await controller.refresh().map(HubDevice.init)
    }

    public func sessionMembers() async -> [UInt64] { await controller.sessionMembers }

    public func addToSession(_ id: UInt64) async throws { try await controller.addToSession(id) }

    public func removeFromSession(_ id: UInt64) async throws {
        guard await controller.sessionMembers.contains(id) else { return }
        try await controller.removeFromSession(id)
    }

    public func setVolume(_ volume: Int, of id: UInt64?) async throws {
        if let id { try await controller.setVolume(volume, of: id) } else { try await controller.setVolumeAll(volume) }
    }

    public func setMute(_ muted: Bool, of id: UInt64) async throws { try await controller.setMute(muted, of: id) }

    /// Each speaker's mute, from its playback status (read now).
    public func mutes() async throws -> [UInt64: Bool] {
        var out: [UInt64: Bool] = [:]
        for d in await controller.devices { out[d.deviceId] = try await controller.session(id: d.deviceId).status().muted }
        return out
    }

    /// The group `name` becomes exactly `ids`: its other members leave it, `ids` join it (an empty list disbands it).
    public func setGroup(_ name: String, members ids: [UInt64]) async throws {
        let current = await controller.groups.first { $0.name == name }?.members.map(\.deviceId) ?? []
        for id in current where !ids.contains(id) { try await controller.leaveGroup(id) }
        if !ids.isEmpty { try await controller.joinGroup(named: name, ids: ids) }
    }
}

extension HubDevice {
    /// The published fields of a speaker's DeviceInfo.
    public init(_ i: DeviceInfo) {
        self.init(deviceID: i.deviceId, deviceName: i.deviceName.value, groupID: i.groupId, groupName: i.groupName.value,
                  modelName: i.modelName.value, ipAddress: i.ipAddress.value, port: Int(i.port), macAddress: i.macAddress.description,
                  volume: Int(i.volume.value), active: i.active, wifiSignalStrength: Int(i.wifiSignalStrength), role: Int(i.role),
                  version: i.version.value, isPlaying: i.isPlaying)
    }
}
