import LightX

extension ApplicationFirmware {
    /// The graphic-EQ commands 0x90-0x98 and the preset-name extension 0x9A.
    mutating func handleGraphicEQ(_ request: Packet) -> Outcome {
        let eq = state.graphicEQ
        switch request.command {
        case .appGraphicEQLimits:
            return Self.readOnly(AppSettings.graphicEQLimits, request, eq.limits)
        case .appGraphicEQDefaultPreset:
            return access(AppSettings.graphicEQDefaultPreset, request, \.graphicEQ.defaultPreset,
                          valid: { v, s in s.graphicEQ.hasPreset(v) })
        case .appGraphicEQCurrentPreset:
            return access(AppSettings.graphicEQCurrentPreset, request, \.graphicEQ.currentPreset,
                          valid: { v, s in s.graphicEQ.hasPreset(v) })
        case .appGraphicEQFactoryPresetReset:
            // The u32 argument carries nothing, but it must be there.
            return perform(AppSettings.graphicEQFactoryResetAll, request) { _, s in
                s.graphicEQ.factoryResetAll()
                return true
            }
        case .appGraphicEQPersistPreset:
            return perform(AppSettings.graphicEQPersistPreset, request) { p, s in
                guard s.graphicEQ.hasPreset(p) else { return false }
                s.graphicEQ.presets[Int(p)].persistedGains = s.graphicEQ.presets[Int(p)].workingGains
                return true
            }
        case .appGraphicEQFactoryResetPreset:
            return perform(AppSettings.graphicEQFactoryResetPreset, request) { p, s in
                guard s.graphicEQ.hasPreset(p) else { return false }
                s.graphicEQ.factoryReset(preset: Int(p))
                return true
            }
        case .appGraphicEQPresetBandSettings:
            return request.opcode == .read ? readPresetGains(request, eq) : writePresetGains(request, eq)
        case .appGraphicEQBand:
            return request.opcode == .read ? readBand(request, eq) : writeBand(request, eq)
        case .appGraphicEQBandFreq:
            // Request argument: u32 band count (its value is not needed: the reply carries the device's count).
            guard request.opcode == .read else { return .notSupported }
            var reader = ArgumentReader(request.buffer, context: "graphic EQ band frequencies request")
            guard (try? reader.u32("band count")) != nil else { return .fail }
            return .ok(GraphicEQBandFrequencies.codec.encode(eq.bandFrequencies))
        case .appGraphicEQPresetName:
            guard request.opcode == .read else { return .notSupported }
            var reader = ArgumentReader(request.buffer, context: "graphic EQ preset name request")
            guard let preset = try? reader.u32("preset") else { return .fail }
            guard eq.hasPreset(preset) else { return .exceededLimits }
            return .ok(GraphicEQRequests.presetNameCodec.encode(eq.presets[Int(preset)].name))
        default:
            return .notSupported
        }
    }

    /// 0x94 read: argument u32 preset, u32 band count (the count is not needed: the reply carries the device's).
    func readPresetGains(_ request: Packet, _ eq: GraphicEQState) -> Outcome {
        var reader = ArgumentReader(request.buffer, context: "graphic EQ preset bands request")
        guard let preset = try? reader.u32("preset"), (try? reader.u32("band count")) != nil else { return .fail }
        guard eq.hasPreset(preset) else { return .exceededLimits }
        let value = GraphicEQPresetGains(preset: preset, gains: eq.presets[Int(preset)].workingGains)
        return .ok(GraphicEQPresetGains.codec.encode(value))
    }

    /// 0x94 write: the band count must equal the device's, the preset must exist and every gain be in range.
    mutating func writePresetGains(_ request: Packet, _ eq: GraphicEQState) -> Outcome {
        var reader = ArgumentReader(request.buffer, context: "graphic EQ preset bands")
        guard (try? reader.u32("preset")) != nil, let count = try? reader.u32("band count") else { return .fail }
        guard UInt64(count) == UInt64(eq.bandCount) else { return .exceededLimits }
        guard let value = try? GraphicEQPresetGains.codec.decode(request.buffer) else { return .fail }
        guard eq.hasPreset(value.preset), value.gains.allSatisfy(eq.accepts(gain:)) else { return .exceededLimits }
        state.graphicEQ.presets[Int(value.preset)].workingGains = value.gains
        return .ok()
    }

    /// 0x95 read: argument u32 preset, u32 band (the third word is ignored); reply preset, band, gain.
    func readBand(_ request: Packet, _ eq: GraphicEQState) -> Outcome {
        var reader = ArgumentReader(request.buffer, context: "graphic EQ band request")
        guard let preset = try? reader.u32("preset"), let band = try? reader.u32("band") else { return .fail }
        guard eq.hasPreset(preset), eq.hasBand(band) else { return .exceededLimits }
        let gain = eq.presets[Int(preset)].workingGains[Int(band)]
        return .ok(GraphicEQBandGain.codec.encode(GraphicEQBandGain(preset: preset, band: band, gain: gain)))
    }

    /// 0x95 write: preset, band and gain must all be in range.
    mutating func writeBand(_ request: Packet, _ eq: GraphicEQState) -> Outcome {
        guard let value = try? GraphicEQBandGain.codec.decode(request.buffer) else { return .fail }
        guard eq.hasPreset(value.preset), eq.hasBand(value.band), eq.accepts(gain: value.gain) else { return .exceededLimits }
        state.graphicEQ.presets[Int(value.preset)].workingGains[Int(value.band)] = value.gain
        return .ok()
    }
}
