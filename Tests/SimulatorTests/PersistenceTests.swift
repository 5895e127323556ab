import Glibc
import LightX
import Synchronization
import Testing
import Transport
@testable import HeadsetSimulator
@testable import Simulator

@Suite struct PersistenceTests {
    /// Serves `device` on an in-memory pair and returns the host end.
    func connect(_ device: SimulatedHeadset) -> TestHost {
        let (host, deviceEnd) = InMemoryTransport.pair()
        Task { await device.serve(deviceEnd) }
        return TestHost(host)
    }

    @Test func writesSurviveARestartOnTheSameFile() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/state.json"
        try await withTimeLimit {
            let first = try await SimulatedHeadset(statePath: path)
            var host = connect(first)
            for request in [
                try AppSettings.ancEnabled.writeRequest(true), try AppSettings.ancLevel.writeRequest(0.25),
                try AppSettings.awarenessLeft.writeRequest(6), try AppSettings.awarenessPreset.writeRequest(.medium),
                try AppSettings.voicePrompt.writeRequest(false),
                try GraphicEQRequests.writeBand(GraphicEQBandGain(preset: 1, band: 2, gain: 7)),
                try AppSettings.graphicEQPersistPreset.writeRequest(1),
                try GraphicEQRequests.writeBand(GraphicEQBandGain(preset: 2, band: 0, gain: -9)),   // not persisted
                try AppSettings.graphicEQDefaultPreset.writeRequest(1),
                try AppSettings.graphicEQCurrentPreset.writeRequest(2),
            ] {
                expectReply(try await host.request(request), to: request)
            }
            // The acknowledgement means the value is on disk already.
            let onDisk = try #require(try await StateStore.read(path: path)?.first)
            #expect(onDisk.ancEnabled && onDisk.graphicEQ.presets[2].workingGains[0] == -9)
            await first.shutdown()

            let second = try await SimulatedHeadset(statePath: path)
            var again = connect(second)
            #expect(try AppSettings.ancEnabled.decode(try await again.request(AppSettings.ancEnabled.readRequest()).buffer))
            #expect(try AppSettings.ancLevel.decode(try await again.request(AppSettings.ancLevel.readRequest()).buffer) == 0.25)
            #expect(try AppSettings.awarenessLeft.decode(try await again.request(AppSettings.awarenessLeft.readRequest()).buffer) == 6)
            #expect(try AppSettings.awarenessPreset.decode(try await again.request(AppSettings.awarenessPreset.readRequest()).buffer) == .medium)
            #expect(try AppSettings.voicePrompt.decode(try await again.request(AppSettings.voicePrompt.readRequest()).buffer) == false)
            // Persisted gains survive; working-only gains fall back to the persisted ones.
            let band = try await again.request(GraphicEQRequests.readBand(preset: 1, band: 2))
            #expect(try GraphicEQBandGain.codec.decode(band.buffer).gain == 7)
            let lost = try await again.request(GraphicEQRequests.readBand(preset: 2, band: 0))
            #expect(try GraphicEQBandGain.codec.decode(lost.buffer).gain == -4)
            // Power-on selects the default preset.
            let current = try await again.request(AppSettings.graphicEQCurrentPreset.readRequest())
            #expect(try AppSettings.graphicEQCurrentPreset.decode(current.buffer) == 1)
            await second.shutdown()
        }
    }

    @Test func buttonPressesAreSavedToo() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/s.json"
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: path)
            await device.press(.anc)
            await device.setBatteryLevel(37)
            await device.shutdown()
            let stored = try #require(try await StateStore.read(path: path)?.first)
            #expect(stored.ancEnabled && stored.batteryPercent == 37)
        }
    }

    @Test func severalDevicesShareOneFile() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/multi.json"
        try await withTimeLimit {
            let store = try await StateStore.open(path: path)
            let a = SimulatedHeadset(sharedStore: store, index: 0)
            let c = SimulatedHeadset(sharedStore: store, index: 2)
            await c.press(.ambient)
            await a.setBatteryLevel(50)
            await store.close()
            let devices = try #require(try await StateStore.read(path: path))
            #expect(devices.count == 3)
            #expect(devices[0].batteryPercent == 50 && devices[0].identity.serialNumber == "TS1-000001")
            #expect(devices[1] == .factory(index: 1))
            #expect(devices[2].awarenessPreset == 1 && devices[2].identity.serialNumber == "TS1-000003")
        }
    }

    @Test func corruptFileIsAClearErrorAndIsLeftAlone() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/bad.json"
        try writeFile(path, "{\"version\": 1, \"devices\": [tru")
        try await withTimeLimit {
            await #expect {
                _ = try await SimulatedHeadset(statePath: path)
            } throws: { error in
                guard let e = error as? SimulatorError else { return false }
                return e.code == .corruptState && e.message.contains(path)
            }
            #expect(try readFile(path) == "{\"version\": 1, \"devices\": [tru")
            // The failed open released the lock: a fixed file opens at once.
            try writeFile(path, String(decoding: try StateStore.encode([.factory()]), as: UTF8.self))
            // (A long lock timeout: the lock must be free, and a slow machine must not make it look taken.)
            let device = try await SimulatedHeadset(statePath: path, lockTimeout: .seconds(10))
            await device.shutdown()
        }
    }

    @Test func wrongVersionIsAClearError() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/v9.json"
        try writeFile(path, "{\"version\": 9, \"devices\": []}")
        try await withTimeLimit {
            await #expect {
                _ = try await SimulatedHeadset(statePath: path)
            } throws: { error in
                (error as? SimulatorError)?.code == .unsupportedStateVersion && "\(error)".contains(path)
            }
        }
    }

    @Test func secondOwnerTimesOutWithAClearError() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/locked.json"
        try await withTimeLimit {
            let owner = try await SimulatedHeadset(statePath: path)
            let start = ContinuousClock.now
            await #expect {
                _ = try await SimulatedHeadset(statePath: path, lockTimeout: .milliseconds(200))
            } throws: { error in
                guard let e = error as? SimulatorError else { return false }
                return e.code == .stateLocked && e.message.contains(path)
            }
            #expect(ContinuousClock.now - start >= .milliseconds(200))
            await owner.shutdown()
        }
    }

    @Test func secondOwnerWaitsForTheFirst() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/handover.json"
        try await withTimeLimit {
            let owner = try await SimulatedHeadset(statePath: path)
            await owner.setBatteryLevel(12)
            let waiter = Task { try await SimulatedHeadset(statePath: path, lockTimeout: .seconds(30)) }
            // The waiter has opened the lock file (the owner's descriptor and its own), so it is trying the lock the
            // owner holds.
            try await waitUntil("the second owner opened the lock file") {
                try await offThePool { descriptors(on: path + ".lock") } >= 2
            }
            await owner.shutdown()
            let second = try await waiter.value
            // It loaded what the first owner saved before letting go.
            #expect(await second.state.batteryPercent == 12)
            await second.shutdown()
        }
    }

    @Test func savesAreAtomicAndLeaveNoTemporaryFiles() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/atomic.json"
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: path)
            var host = connect(device)
            _ = try await host.request(AppSettings.ancLevel.writeRequest(0))
            // A reader keeps parsing the file while the device saves after every write.
            let progress = ParseProgress()
            let reader = Task.detached { () -> (parsed: Int, failure: String?) in
                var parsed = 0
                while !Task.isCancelled {
                    do {
                        if try await StateStore.read(path: path) != nil {
                            parsed += 1
                            progress.parsed()
                        }
                        try? await Task.sleep(for: .milliseconds(1))  // a reader, not a busy loop
                    } catch {
                        return (parsed, "\(error)")
                    }
                }
                return (parsed, nil)
            }
            // The reader is running before the writes start (on a loaded machine it might otherwise only start after).
            try await waitUntil("the reader parsed the file") { progress.count > 0 }
            for k in 0..<40 {
                let request = try AppSettings.ancLevel.writeRequest(Float(k) / 40)
                expectReply(try await host.request(request), to: request)
            }
            reader.cancel()
            let outcome = await reader.value
            #expect(outcome.failure == nil, "the state file did not parse mid-save")
            #expect(outcome.parsed > 0)
            await device.shutdown()
            #expect(dir.entries() == ["atomic.json", "atomic.json.flash", "atomic.json.lock"])
            let final = try #require(try await StateStore.read(path: path)?.first)
            #expect(final.ancLevel == Float(39) / 40)
        }
    }

    @Test func missingParentDirectoriesAreCreated() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/a/b/state.json"
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: path)
            await device.press(.anc)
            await device.shutdown()
            #expect(try await StateStore.read(path: path)?.first?.ancEnabled == true)
            unlink(path); unlink(path + ".lock"); unlink(path + ".flash"); rmdir(dir.path + "/a/b"); rmdir(dir.path + "/a")
        }
    }
}

/// How often a background reader parsed the state file.
final class ParseProgress: Sendable {
    private let value = Mutex(0)
    func parsed() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

/// How many of this process's descriptors are open on `path` (entries of /proc/self/fd linking to it).
private func descriptors(on path: String) -> Int {
    guard let resolved = realpath(path, nil) else { return 0 }
    let path = String(cString: resolved)
    free(resolved)
    guard let dir = opendir("/proc/self/fd") else { return 0 }
    defer { closedir(dir) }
    var count = 0
    var buffer = [CChar](repeating: 0, count: 4096)
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard Int(name) != nil else { continue }
        let n = readlink("/proc/self/fd/" + name, &buffer, buffer.count - 1)
        guard n > 0 else { continue }
        if String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) == path { count += 1 }
    }
    return count
}
