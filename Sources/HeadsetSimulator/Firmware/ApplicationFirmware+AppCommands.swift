import LightX

extension ApplicationFirmware {
    /// 0x83 AppSysState: this model always reports 0 (the sheet defines no other value).
    static let systemState = Setting("system state", .appSysState, .readOnly, .uint32("system state"))
    /// 0x84 AppIsHeadsetOn: the simulated headset is always on (u32 1).
    static let headsetOn = Setting("headset on", .appIsHeadsetOn, .readOnly, .bool32("headset on"))

    /// The App group (0x7F-0xBF).
    mutating func handleApp(_ request: Packet) -> Outcome {
        switch request.command {
        case .appShutdown:
            // Write-only; the argument (the default zero buffer) carries nothing.
            guard request.opcode == .write else { return .notSupported }
            shutdownRequested = true
            return .ok()
        case .appSysState:
            return Self.readOnly(Self.systemState, request, 0)
        case .appIsHeadsetOn:
            return Self.readOnly(Self.headsetOn, request, true)
        case .appAudioEQPreset:
            return access(AppSettings.audioEQPreset, request, \.audioEQPreset,
                          read: { AudioEQPreset(rawValue: $0) },
                          write: { v, _ in v.rawValue <= HeadsetState.maxPresetCode ? v.rawValue : nil })
        case .appANCEnable:
            return access(AppSettings.ancEnabled, request, \.ancEnabled)
        case .appANCAwarenessPreset:
            return access(AppSettings.awarenessPreset, request, \.awarenessPreset,
                          read: { AwarenessPreset(rawValue: $0) },
                          write: { v, _ in v.rawValue <= HeadsetState.maxPresetCode ? v.rawValue : nil })
        case .appFirmwareVersion:
            return Self.readOnly(AppSettings.firmwareVersion, request, state.firmwareVersion)
        case .appANCLevel:
            return access(AppSettings.ancLevel, request, \.ancLevel, valid: { v, _ in v.isFinite && (0...1).contains(v) })
        case .appAwarenessRawLeft:
            return access(AppSettings.awarenessLeft, request, \.ambientLeft, valid: { v, s in v < s.ambientSteps })
        case .appAwarenessRawRight:
            return access(AppSettings.awarenessRight, request, \.ambientRight, valid: { v, s in v < s.ambientSteps })
        case .appAwarenessRawSteps:
            return Self.readOnly(AppSettings.awarenessSteps, request, Int32(clamping: state.ambientSteps))
        case .appBatteryLevel:
            return Self.readOnly(AppSettings.batteryLevel, request, state.batteryPercent)
        case .appSmartButtonFeatureIndex:
            return access(AppSettings.smartButton, request, \.smartButton)
        case .appOnEarDetectionWithAutoOff:
            return access(AppSettings.autoOff, request, \.autoOff)
        case .appVoicePromptEnable:
            return access(AppSettings.voicePrompt, request, \.voicePrompt)
        case .appGraphicEQLimits, .appGraphicEQDefaultPreset, .appGraphicEQCurrentPreset,
             .appGraphicEQFactoryPresetReset, .appGraphicEQPresetBandSettings, .appGraphicEQBand,
             .appGraphicEQPersistPreset, .appGraphicEQBandFreq, .appGraphicEQFactoryResetPreset,
             .appGraphicEQPresetName:
            return handleGraphicEQ(request)
        default:
            // Tap, sensor and calibration commands (0xA0-0xA7, 0xB2, 0xB3): this model has no sensors. The rest of
            // the group has no defined meaning.
            return .notSupported
        }
    }

    // MARK: - Setting helpers

    /// A read-only value: reads answer `value`, writes are NotSupported.
    static func readOnly<V>(_ setting: Setting<V>, _ request: Packet, _ value: V) -> Outcome {
        guard request.opcode == .read, setting.access.readable else { return .notSupported }
        return .ok(setting.encode(value))
    }

    /// A setting stored at `path` with its wire type: reads encode it, writes decode (Fail when too short), check
    /// `valid` against the current state (ExceededLimits when false) and store it.
    mutating func access<V>(
        _ setting: Setting<V>, _ request: Packet, _ path: WritableKeyPath<HeadsetState, V>,
        valid: (V, HeadsetState) -> Bool = { _, _ in true }
    ) -> Outcome {
        access(setting, request, path, read: { $0 }, write: { v, s in valid(v, s) ? v : nil })
    }

    /// A setting stored at `path` as `Stored`: `read` converts to the wire value, `write` converts back or returns
    /// nil for a value out of range (ExceededLimits, state unchanged).
    mutating func access<V, Stored>(
        _ setting: Setting<V>, _ request: Packet, _ path: WritableKeyPath<HeadsetState, Stored>,
        read toWire: (Stored) -> V, write fromWire: (V, HeadsetState) -> Stored?
    ) -> Outcome {
        if request.opcode == .read {
            guard setting.access.readable else { return .notSupported }
            return .ok(setting.encode(toWire(state[keyPath: path])))
        }
        guard setting.access.writable else { return .notSupported }
        guard let value = try? setting.decode(request.buffer) else { return .fail }
        guard let stored = fromWire(value, state) else { return .exceededLimits }
        state[keyPath: path] = stored
        return .ok()
    }

    /// A write-only action: decodes the argument (Fail when too short) and runs `action`, which returns false —
    /// without changing anything — when the value is out of range (ExceededLimits).
    mutating func perform<V>(
        _ setting: Setting<V>, _ request: Packet, _ action: (V, inout HeadsetState) -> Bool
    ) -> Outcome {
        guard request.opcode == .write, setting.access.writable else { return .notSupported }
        guard let value = try? setting.decode(request.buffer) else { return .fail }
        return action(value, &state) ? .ok() : .exceededLimits
    }
}
