import LightX
import Transport

// Power: cuts, reboots, powering up, and shutting the device down.
extension SimulatedHeadset {
    /// Cuts the power now (as an injected `cut@N` does, but between flash operations: an operation in progress
    /// completes, its reply is lost). Every host link closes, queued requests are dropped, RAM is lost; the device
    /// powers up after `powerUpDelay` — at once when that is zero (time scale 0), before this returns.
    public func powerCut() async {
        await losePower(offFor: machine.config.timing.powerUpDelay)
    }

    /// Resets the device: like `powerCut()` without the time off (it powers up before this returns).
    public func reboot() async {
        await losePower(offFor: .zero)
    }

    /// Stops the device: cancels its timers, closes every host link (ending their `serve` calls), stores the running
    /// state of an in-process device, and — when this device owns its state file — waits for pending writes and
    /// releases the file's lock. Idempotent.
    public func shutdown() async {
        guard service.shutDown() else { return }
        modes.finish()
        batteryTask?.cancel()
        batteryTask = nil
        powerTask?.cancel()
        roomWaiters.resumeAll()
        if let processor {
            processor.cancel()
            await processor.value
        }
        if let storing = persistence.storeRunningStateAtShutdown(HeadsetPersistence.runningState(of: machine, now: .now)) {
            persistence.record(await storing.wait())
        }
        for host in hosts.removeAll() {
            host.finish()
            await host.link.close()
        }
        if persistence.ownsStore { await store?.close() }
        readinessWaiters.resumeAll()
    }

    func losePower(offFor delay: Duration) async {
        guard let expected = service.powerLost() else { return }
        if machine.isPowered { machine.powerOff() }
        forgetResumedRAMIfChanged()
        modes.publish(nil)
        powerTask?.cancel()
        roomWaiters.resumeAll()
        let dropped = hosts.removeAll()
        for host in dropped { host.finish() }
        logger?.info("device \(index): power lost; up again in \(delay)")
        var saving: WriteCompletion?
        if delay > .zero {
            powerTask = Task { [weak self] in
                do { try await Task.sleep(for: delay) } catch { return }
                await self?.powerUpAndSave(expecting: expected)
            }
        } else {
            // Up again before the links are seen to close, so a host that sees its link drop finds the device on.
            saving = powerUp(expecting: expected)
        }
        for host in dropped { await Self.closeAbruptly(host.link) }
        if let saving { persistence.record(await saving.wait()) }
    }

    private func powerUpAndSave(expecting expected: HeadsetServiceMachine.Epoch) async {
        if let saving = powerUp(expecting: expected) { persistence.record(await saving.wait()) }
    }

    /// Powers the device up (unless another power loss or a shutdown came in between); returns the save of the
    /// settings the power-on changed, if any.
    private func powerUp(expecting expected: HeadsetServiceMachine.Epoch) -> WriteCompletion? {
        guard service.mayPowerUp(expecting: expected), !machine.isPowered else { return nil }
        let before = machine.settings
        let now = ContinuousClock.now
        machine.powerOn(now: now, delayed: true)
        modes.publish(machine.runningImage)
        service.poweredUp(now: now)
        readinessWaiters.resumeAll()
        logger?.info("device \(index): powered up in the \(machine.runningImage?.rawValue ?? "?")")
        return machine.settings != before ? persistence.saveSettings(machine.settings) : nil
    }

    /// Closes a link at once: a conditioned link's inner transport first, so queued traffic is not delivered.
    private static func closeAbruptly(_ link: any Transport) async {
        if let conditioned = link as? ConditionedTransport { await closeAbruptly(conditioned.inner) }
        await link.close()
    }
}

// Readiness: waiting for the device to answer.
extension SimulatedHeadset {
    /// Waits until the device is powered and ready, or `timeout` passes; returns whether it is. Sleeps until the end of
    /// the readiness delay, or while the device is off until it powers up: no polling. Cancelled, it returns at once
    /// whether the device is ready then; after `shutdown()`, false.
    public func waitUntilReady(timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !service.isShutDown {
            if isReady { return true }
            guard !Task.isCancelled else { return false }
            guard ContinuousClock.now < deadline else { return false }
            // Powered: ready at `readyAt` unless the power goes meanwhile. Off: woken by the power-up.
            await pause(until: machine.isPowered ? min(deadline, machine.readyAt) : deadline)
        }
        return false
    }

    /// Suspends until `instant`, a power-up or shutdown (`readinessWaiters`), or cancellation, whichever is first.
    private func pause(until instant: ContinuousClock.Instant) async {
        let id = makeWaiterID()
        let timer = Task { [weak self] in
            do { try await Task.sleep(until: instant, clock: .continuous) } catch { return }
            await self?.resumeWaiter(id, for: .readiness)
        }
        await suspend(id, for: .readiness)
        timer.cancel()
    }
}
