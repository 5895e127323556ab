import LightX

/// A physical button on the simulated headset.
public enum HeadsetButton: String, Sendable, Hashable, CaseIterable, Codable {
    /// The ANC button. With the smart button set to ANC (0xB5 = 1) it toggles ANC; otherwise it cycles the
    /// awareness preset like the ambient button.
    case anc
    /// The ambient button: cycles the awareness preset None → Low → Medium → High → None.
    case ambient
}

extension ApplicationFirmware {
    /// The device's buttons (`ApplicationFirmware.Button.anc`, `.ambient`).
    public typealias Button = HeadsetButton

    /// The battery level below which drain does not go: at this level the next drain step stands for "the user plugs
    /// the charger" and the level jumps back to 100 %.
    public static let batteryFloorPercent: UInt32 = 5

    /// A press of `button` on the device. Returns the push that announces the change: 0xC5 with the new ANC state
    /// (u32 0/1) or 0xC6 with the new awareness preset (u32).
    public mutating func pressButton(_ button: HeadsetButton) -> [Packet] {
        switch button {
        case .anc where state.smartButton:
            state.ancEnabled.toggle()
            return [Self.push(.appPushANCEnable, AppSettings.ancEnabled.encode(state.ancEnabled))]
        case .anc, .ambient:
            let current = state.awarenessPreset
            state.awarenessPreset = current >= HeadsetState.maxPresetCode ? 0 : current + 1
            return [Self.push(.appPushANCAwarenessPreset,
                              AppSettings.awarenessPreset.encode(AwarenessPreset(rawValue: state.awarenessPreset)))]
        }
    }

    /// Lets `elapsed` of device time pass. The battery drains 1 % per `drainInterval`; once it is at 5 % the next
    /// step models the user plugging the charger and the level jumps to 100 %, so a long-running simulator cycles
    /// 100 → 5 → 100 forever. Returns one 0xF0 push (u32 percent, Tuneup extension) with the final level when it
    /// changed; several steps in one call are coalesced into that single push. Time shorter than an interval is
    /// accumulated for the next call.
    public mutating func advanceTime(by elapsed: Duration) -> [Packet] {
        let interval = Self.nanoseconds(drainInterval)
        let delta = Self.nanoseconds(elapsed)
        guard interval > 0, delta > 0 else { return [] }
        let (sum, overflow) = Self.nanoseconds(drainElapsed).addingReportingOverflow(delta)
        let total = overflow ? Int64.max : sum
        var steps = total / interval
        drainElapsed = .nanoseconds(total % interval)
        guard steps > 0 else { return [] }
        let before = state.batteryPercent
        drainOneStep()
        steps -= 1
        // After one step the level is on the 96-step cycle 100, 99, ..., 5, so only the remainder matters.
        steps %= Int64(100 - Self.batteryFloorPercent + 1)
        while steps > 0 {
            drainOneStep()
            steps -= 1
        }
        return batteryPush(ifChangedFrom: before)
    }

    /// Sets the battery level on the device side (clamped to 100), as the simulator's control line `battery N` does.
    /// Returns the 0xF0 push when the level changed.
    public mutating func setBatteryLevel(_ percent: UInt32) -> [Packet] {
        let before = state.batteryPercent
        state.batteryPercent = min(percent, 100)
        return batteryPush(ifChangedFrom: before)
    }

    mutating func drainOneStep() {
        state.batteryPercent = state.batteryPercent <= Self.batteryFloorPercent ? 100 : state.batteryPercent - 1
    }

    func batteryPush(ifChangedFrom before: UInt32) -> [Packet] {
        guard state.batteryPercent != before else { return [] }
        return [Self.push(.appPushBatteryLevel, AppSettings.batteryLevel.encode(state.batteryPercent))]
    }

    /// `duration` in whole nanoseconds, saturating at Int64.min/max.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }
}
