import LightX

// The request queue: flow control, processing one request at a time, persisting before replying.
extension SimulatedHeadset {
    func submit(_ request: Packet, from id: UInt64) async {
        var submission = service.submit(request, from: id, powered: machine.isPowered, image: machine.runningImage, now: .now)
        if submission == .waitForRoom {
            // Back-pressure: the link is not read until there is room (or the link's task is cancelled).
            while service.mustWaitForRoom, hosts[id] != nil, !Task.isCancelled {
                await suspend(makeWaiterID(), for: .room)
            }
            submission = service.admitAfterWait(request, from: id, powered: machine.isPowered, hostConnected: hosts[id] != nil,
                                                cancelled: Task.isCancelled, now: .now)
        }
        switch submission {
        case .ignore, .waitForRoom:
            break
        case .answerNotReady:
            if let host = hosts[id] {
                host.reply(host.encode(ApplicationFirmware.reply(to: request, .notReady), answering: request))
            }
        case .queued(let startProcessor):
            if startProcessor { processor = Task { await self.drainQueue() } }
        }
    }

    private func drainQueue() async {
        while let item = service.next() {
            roomWaiters.resumeFirst()
            await process(item)
        }
        processor = nil
    }

    /// Handles one request: the machine acts at once; persistence runs while the device is busy for the modelled
    /// time; then the reply goes out, unless the power was lost meanwhile (or the device shut down).
    private func process(_ item: RequestQueue.Item) async {
        guard let started = service.epoch else { return }
        let now = ContinuousClock.now
        let modeBefore = machine.runningImage
        let step = machine.handle(item.request, now: now, from: hosts[item.host] != nil ? item.host : nil)
        forgetResumedRAMIfChanged()
        let modeAfter = machine.runningImage
        let flashWrite = persistence.saveFlash(step.touched) { flashContents($0) }
        let settingsSave = step.settingsChanged ? persistence.saveSettings(machine.settings) : nil
        if step.powerCut {
            await losePower(offFor: machine.config.timing.powerUpDelay)
        } else if step.busy > .zero {
            let busyUntil = service.busy(step.busy, arrived: item.arrived)
            // Cancelled only by `shutdown()`, which ends the power period: no reply goes out then.
            do { try await Task.sleep(until: busyUntil, tolerance: .zero, clock: .continuous) } catch {}
        }
        if let flashWrite { persistence.record(await flashWrite.wait()) }
        if let settingsSave { persistence.record(await settingsSave.wait()) }
        guard !step.powerCut, service.mayReply(begunIn: started) else { return }
        let modeChanged = modeAfter != modeBefore
        guard let host = hosts[item.host] else {
            if modeChanged { modes.publish(modeAfter) }
            return
        }
        // A jump is reported once its reply is on the link (see `modeChanges()`).
        let after = modeChanged ? modes.schedule(modeAfter) : nil
        for (k, reply) in step.replies.enumerated() {
            host.reply(host.encode(reply, answering: item.request), after: k == step.replies.count - 1 ? after : nil)
        }
        if step.replies.isEmpty { after?() }
    }

    /// Clears the stored RAM state once the RAM no longer matches it.
    func forgetResumedRAMIfChanged() {
        persistence.forgetResumedRAMIfChanged { HeadsetPersistence.runningState(of: machine, now: .now) }
    }
}
