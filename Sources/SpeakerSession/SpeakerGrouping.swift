extension SpeakerController {
    /// `speaker group`: the speakers at list positions `indices`, then those with device ids `ids` (each checked),
    /// leave their group (`name` nil) or join the group `name`; the groups afterwards.
    /// - Throws: `SpeakerSessionError(.unknownDevice)` for a position or id the controller does not have (nothing
    ///   changed), what the speakers answer.
    public func regroup(indices: [Int], ids: [UInt64], join name: String?) async throws -> [SpeakerGroupReport] {
        var chosen: [UInt64] = []
        for i in indices { chosen.append(try info(index: i).deviceId) }
        for i in ids { chosen.append(try info(id: i).deviceId) }
        if let name {
            _ = try await joinGroup(named: name, ids: chosen)
        } else {
            for i in chosen { try await leaveGroup(i) }
        }
        return await SpeakerGroupReport.of(self)
    }
}
