import LightX

// Device-side events (buttons, battery, time) and the pushes they send.
extension SimulatedHeadset {
    /// Presses a button on the device; returns (and sends to every host) the resulting push. Buttons only act while
    /// the application runs.
    @discardableResult
    public func press(_ button: HeadsetButton) async -> [Packet] {
        await deviceEvent(applicationOnly: true) { $0.pressButton(button) }
    }

    /// Sets the battery level from the device side (e.g. the `battery N` control line); returns (and sends) the push
    /// when the level changed and the application runs.
    @discardableResult
    public func setBatteryLevel(_ percent: UInt32) async -> [Packet] {
        await deviceEvent(applicationOnly: false) { $0.setBatteryLevel(percent) }
    }

    /// Lets device time pass (the battery timer calls this with the measured elapsed time; tests may call it
    /// directly). Returns (and sends) the battery push when the level changed and the application runs.
    @discardableResult
    public func advanceTime(by elapsed: Duration) async -> [Packet] {
        await deviceEvent(applicationOnly: false) { $0.advanceTime(by: elapsed) }
    }

    private func deviceEvent(applicationOnly: Bool, _ event: (inout ApplicationFirmware) -> [Packet]) async -> [Packet] {
        let (pushes, changed) = machine.deviceEvent(applicationOnly: applicationOnly, event)
        if changed, let save = persistence.saveSettings(machine.settings) { persistence.record(await save.wait()) }
        if !pushes.isEmpty, service.talks { hosts.broadcast(pushes) }
        return pushes
    }

    /// Starts the battery drain (once, while the device is not shut down and the drain is enabled).
    func startBatteryTimer() {
        guard batteryTask == nil, !service.isShutDown, machine.config.drainInterval > .zero else { return }
        let interval = machine.config.drainInterval
        batteryTask = Task { [weak self] in
            let clock = ContinuousClock()
            var last = clock.now
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return
                }
                let now = clock.now
                guard let self else { return }
                await self.advanceTime(by: now - last)
                last = now
            }
        }
    }
}
