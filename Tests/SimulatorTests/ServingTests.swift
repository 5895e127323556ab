import Glibc
import LightX
import Support
import Testing
import Transport
@testable import HeadsetSimulator
@testable import Simulator

@Suite struct ServingTests {
    func serve(_ device: SimulatedHeadset) -> TestHost {
        let (host, deviceEnd) = InMemoryTransport.pair()
        Task { await device.serve(deviceEnd) }
        return TestHost(host)
    }

    /// Requests with garbage before, between and inside the stream; every valid frame must be answered in order.
    func garbageInterleavedExchange(_ host: inout TestHost) async throws {
        let requests: [Packet] = [
            AppSettings.batteryLevel.readRequest(), try AppSettings.ancEnabled.writeRequest(true),
            AppSettings.ancEnabled.readRequest(), try GraphicEQRequests.readPresetName(preset: 2),
        ]
        var rng = SeededRandom(seed: 99)
        var stream: [UInt8] = []
        for request in requests {
            let garbage = (0..<(Int(rng.next() % 40) + 1)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            stream += garbage + [0xFF, 0x5A, 0x00, 0x00, 0x01]   // includes a false frame start
            stream += SPPFraming.encode(request)
        }
        var corrupted = SPPFraming.encode(AppSettings.voicePrompt.readRequest())
        corrupted[corrupted.count - 1] ^= 0xFF   // bad checksum: must be skipped, not answered
        stream += corrupted + [0x00, 0xFF]
        // Deliver in odd-sized pieces.
        var offset = 0
        while offset < stream.count {
            let n = min(stream.count - offset, Int(rng.next() % 50) + 1)
            try await host.transport.send(Array(stream[offset..<offset + n]))
            offset += n
        }
        for request in requests {
            let reply = try #require(try await host.nextReply())
            expectReply(reply, to: request)
        }
        #expect(try await host.nextReply(timeout: .milliseconds(200)) == nil, "the corrupted frame is not answered")
        // The stream is still usable afterwards.
        let name = try await host.request(GraphicEQRequests.readPresetName(preset: 0))
        #expect(try GraphicEQRequests.presetNameCodec.decode(name.buffer) == "Music")
    }

    @Test func answersValidFramesAmidGarbageInMemory() async throws {
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: nil)
            var host = serve(device)
            try await garbageInterleavedExchange(&host)
            await device.shutdown()
        }
    }

    @Test func answersValidFramesAmidGarbageOverTCP() async throws {
        try await withTimeLimit {
            let server = try await SimulatorServer.listenTCP(host: "127.0.0.1", port: 0, count: 2, statePath: nil)
            #expect(server.endpoints.count == 2)
            var clients: [any Transport] = []
            for endpoint in server.endpoints {
                guard case .tcp(let h, let port) = try DeviceAddress(parsing: endpoint) else {
                    throw TestFailure("endpoint \(endpoint) is not a TCP address")
                }
                #expect(h == "127.0.0.1" && port != 0)
                clients.append(try await TCPTransport.connect(host: h, port: port))
            }
            var first = TestHost(clients[0])
            try await garbageInterleavedExchange(&first)
            // The second endpoint is a different device.
            var second = TestHost(clients[1])
            let serial = try #require(ConfigStrings.setting(for: .configSerialNumber))
            #expect(try serial.decode(try await second.request(serial.readRequest()).buffer) == "TS1-000002")
            #expect(try serial.decode(try await first.request(serial.readRequest()).buffer) == "TS1-000001")
            // Reconnecting works: serving continues across clients.
            await clients[0].close()
            guard case .tcp(let h, let port) = try DeviceAddress(parsing: server.endpoints[0]) else { throw TestFailure("not a TCP address: \(server.endpoints[0])") }
            var again = TestHost(try await TCPTransport.connect(host: h, port: port))
            #expect(try AppSettings.ancEnabled.decode(try await again.request(AppSettings.ancEnabled.readRequest()).buffer))
            await again.transport.close()
            await clients[1].close()
            await server.shutdown()
        }
    }

    @Test func servesPseudoTerminalClientsOneAfterAnother() async throws {
        try await withTimeLimit {
            let server = try await SimulatorServer.listenPTY(count: 1, statePath: nil)
            #expect(server.endpoints[0].hasPrefix("serial:/dev/"))
            let path = String(server.endpoints[0].dropFirst("serial:".count))
            for round in 0..<2 {
                // The client path of `serial:PATH`, as the CLI opens it.
                var host = TestHost(try await SerialTransport.open(path: path))
                let request = try AppSettings.awarenessLeft.writeRequest(UInt32(round + 1))
                expectReply(try await host.request(request), to: request)
                let read = try await host.request(AppSettings.awarenessLeft.readRequest())
                #expect(try AppSettings.awarenessLeft.decode(read.buffer) == UInt32(round + 1))
                await host.transport.close()
                // Let the device see the client leave before the next one opens the slave: a pty cannot tell two
                // clients apart, so bytes of a client arriving in that gap could land in the old session.
                while await server.devices[0].connectedHosts > 0 { try await Task.sleep(for: .milliseconds(5)) }
            }
            await server.shutdown()
        }
    }

    @Test func pushesGoToEveryConnectedHostButHostWritesPushNothing() async throws {
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: nil)
            var a = serve(device)
            var b = serve(device)
            // Make sure both links are registered.
            _ = try await a.request(AppSettings.batteryLevel.readRequest())
            _ = try await b.request(AppSettings.batteryLevel.readRequest())
            #expect(await device.connectedHosts == 2)

            expectReply(try await a.request(AppSettings.ancEnabled.writeRequest(true)), to: try AppSettings.ancEnabled.writeRequest(true))
            #expect(try await a.next(timeout: .milliseconds(200)) == nil, "no push for a host write")
            #expect(try await b.next(timeout: .milliseconds(50)) == nil, "no push for a host write")

            await device.press(.anc)
            let pushA = try #require(try await a.nextPush())
            let pushB = try #require(try await b.nextPush())
            for push in [pushA, pushB] {
                #expect(push.command == .appPushANCEnable)
                #expect(try AppSettings.ancEnabled.decode(push.buffer) == false)
            }
            await device.press(.ambient)
            let push = try #require(try await a.nextPush())
            #expect(push.command == .appPushANCAwarenessPreset)
            #expect(try AppSettings.awarenessPreset.decode(push.buffer) == .low)
            await device.shutdown()
        }
    }

    @Test func batteryTimerDrainsAndPushes() async throws {
        try await withTimeLimit {
            let start = ContinuousClock.now
            let device = try await SimulatedHeadset(statePath: nil, drainInterval: .milliseconds(100))
            var host = serve(device)
            // Drain follows measured time, so a late timer (a loaded machine) may drain more than 1 % at once: check
            // the direction, and that it drained no faster than the time that passed allows.
            let first = try #require(try await host.nextPush())
            let elapsed = ContinuousClock.now - start
            #expect(first.command == .appPushBatteryLevel)
            let level1 = try AppSettings.batteryLevel.decode(first.buffer)
            let allowed = UInt32(min(95, elapsed / .milliseconds(100)))
            #expect(level1 <= 99 && level1 >= 100 - allowed, "level \(level1) after \(elapsed)")
            let second = try #require(try await host.nextPush())
            let level2 = try AppSettings.batteryLevel.decode(second.buffer)
            #expect(level2 < level1)
            await device.shutdown()
        }
    }

    @Test func shutdownEndsServingAndClosesLinks() async throws {
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: nil)
            let (host, deviceEnd) = InMemoryTransport.pair()
            let serving = Task { await device.serve(deviceEnd) }
            var h = TestHost(host)
            _ = try await h.request(AppSettings.batteryLevel.readRequest())
            await device.shutdown()
            await serving.value
            await #expect(throws: TransportError(.closed, "")) { _ = try await host.receive() }
            // A link offered after shutdown is closed at once.
            let (late, lateDevice) = InMemoryTransport.pair()
            await device.serve(lateDevice)
            await #expect(throws: TransportError(.closed, "")) { _ = try await late.receive() }
        }
    }

    @Test func inProcessSimulatorReleasesTheStateFileOnClose() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/inproc.json"
        try await withTimeLimit {
            let link = try await SimulatorServer.inProcess(statePath: path)
            #expect(link.peerDescription == "sim:\(path)")
            var host = TestHost(link)
            expectReply(try await host.request(AppSettings.autoOff.writeRequest(false)), to: try AppSettings.autoOff.writeRequest(false))
            await link.close()
            // Free again once closed. (The lock timeout only needs to be short where the lock must stay taken; here a
            // long one keeps a slow machine from failing the test.)
            let next = try await SimulatorServer.inProcess(statePath: path, options: SimulatorOptions(lockTimeout: .seconds(10)))
            var again = TestHost(next)
            #expect(try AppSettings.autoOff.decode(try await again.request(AppSettings.autoOff.readRequest()).buffer) == false)
            // While it is open, another owner cannot have the file.
            await #expect(throws: SimulatorError(.stateLocked, "")) {
                _ = try await SimulatorServer.inProcess(statePath: path, options: SimulatorOptions(lockTimeout: .milliseconds(50)))
            }
            await next.close()
        }
    }

    @Test func serverAppliesControlCommands() async throws {
        try await withTimeLimit {
            let server = try await SimulatorServer.listenTCP(count: 2, statePath: nil)
            #expect(try await server.perform(SimulatorControl.parse("press anc 1")))
            #expect(try await server.perform(SimulatorControl.parse("battery 33")))
            #expect(await server.devices[1].state.ancEnabled)
            #expect(await !server.devices[0].state.ancEnabled)
            #expect(await server.devices[0].state.batteryPercent == 33)
            await #expect(throws: SimulatorError(.invalidArgument, "")) {
                try await server.perform(.press(.anc, device: 2))
            }
            #expect(try await server.perform(.quit) == false)
            await server.shutdown()
        }
    }

    @Test func serverRejectsBadArguments() async throws {
        await #expect(throws: SimulatorError(.invalidArgument, "")) {
            _ = try await SimulatorServer.listenTCP(count: 0, statePath: nil)
        }
        await #expect(throws: SimulatorError(.invalidArgument, "")) {
            _ = try await SimulatorServer.listenTCP(port: 65535, count: 2, statePath: nil)
        }
    }

    @Test func randomGarbageNeverStopsTheDevice() async throws {
        try await withTimeLimit {
            let device = try await SimulatedHeadset(statePath: nil)
            var host = serve(device)
            var rng = SeededRandom(seed: 5150)
            for _ in 0..<200 {
                let n = Int(rng.next() % 300) + 1
                try await host.transport.send((0..<n).map { _ in
                    rng.next() % 7 == 0 ? 0xFF : UInt8(truncatingIfNeeded: rng.next())
                })
            }
            // Whatever was buffered as a partial frame, a clean request after at most 275 junk-free bytes gets through.
            try await host.transport.send([UInt8](repeating: 0, count: 300))
            while try await host.next(timeout: .milliseconds(100)) != nil {}
            // Answers to frames found in the garbage may still be on their way on a slow machine: take the reply
            // that answers this request.
            let request = AppSettings.batteryLevel.readRequest()
            try await host.send(request)
            var reply = try #require(try await host.nextReply())
            while reply.header.param0 != request.header.param0 { reply = try #require(try await host.nextReply()) }
            #expect(try AppSettings.batteryLevel.decode(reply.buffer) == 100)
            await device.shutdown()
        }
    }
}
