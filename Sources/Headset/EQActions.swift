import LightX

// The `tuneup eq` actions on presets named as people name them (a device name in any case, or a number; nil: the
// current preset), each answering with the preset's gains afterwards (`GraphicEQPresetReport`).
extension Headset {
    /// The preset `text` names on this device (nil: the current one).
    func graphicEQPreset(_ text: String?) async throws -> Int { try await graphicEQInfo().preset(text) }

    /// Sets every band's gain of the preset, or one band's (`band` and its `gain`); its gains afterwards.
    public func setGraphicEQ(preset text: String?, gains: [Int]) async throws -> GraphicEQPresetReport {
        let preset = try await graphicEQPreset(text)
        try await setGraphicEQGains(preset: preset, gains: gains)
        return try await graphicEQPresetGains(preset: String(preset))
    }

    /// Sets one band's gain of the preset; its gains afterwards.
    public func setGraphicEQ(preset text: String?, band: Int, gain: Int) async throws -> GraphicEQPresetReport {
        let preset = try await graphicEQPreset(text)
        try await setGraphicEQBand(preset: preset, band: band, gain: gain)
        return try await graphicEQPresetGains(preset: String(preset))
    }

    /// Makes the preset current (nil: leaves it); the current preset's gains afterwards.
    public func selectGraphicEQPreset(named text: String?) async throws -> GraphicEQPresetReport {
        if let text { try await selectGraphicEQPreset(try await graphicEQPreset(text)) }
        return try await graphicEQPresetGains(preset: nil)
    }

    /// Stores the preset's current gains in non-volatile memory; its gains.
    public func persistGraphicEQPreset(named text: String?) async throws -> GraphicEQPresetReport {
        let preset = try await graphicEQPreset(text)
        try await persistGraphicEQPreset(preset)
        return try await graphicEQPresetGains(preset: String(preset))
    }

    /// Makes the preset the one the headset starts with; its gains.
    public func setDefaultGraphicEQPreset(named text: String) async throws -> GraphicEQPresetReport {
        let preset = try await graphicEQPreset(text)
        try await setDefaultGraphicEQPreset(preset)
        return try await graphicEQPresetGains(preset: String(preset))
    }

    /// Restores the factory gains of the preset, or of every preset (and the default) for nil; the preset's gains
    /// afterwards (the current one's for nil).
    public func factoryResetGraphicEQ(named text: String?) async throws -> GraphicEQPresetReport {
        guard let text else {
            try await factoryResetGraphicEQ(preset: nil)
            return try await graphicEQPresetGains(preset: nil)
        }
        let preset = try await graphicEQPreset(text)
        try await factoryResetGraphicEQ(preset: preset)
        return try await graphicEQPresetGains(preset: String(preset))
    }

    /// Sets the audio EQ preset (nil: leaves it); its name afterwards, lowercase (its number when it has no name).
    public func audioEQPresetName(setting preset: AudioEQPreset?) async throws -> String {
        if let preset { try await setAudioEQPreset(preset) }
        let value = try await audioEQPreset()
        return value.name?.lowercased() ?? String(value.rawValue)
    }
}
