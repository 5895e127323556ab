import Testing
import Transport
import Wearable
import WearableLink
import WearableSession
import WearableSimulator

@Suite(.timeLimit(.minutes(1))) struct LinkTests {
    /// Over TCP on real time: no clock to pump, the test waits for the samples it expects.
    @Test func aSessionOverTCP() async throws {
        let device = SimulatedWearable()
        let server = try WearableSimulatorServer(devices: [device])
        let listener = try await TCPListener.bind()
        try server.attach(listener, toDevice: 0)
        let session = WearableDeviceSession(address: listener.boundAddress, connector: TransportConnector())
        let events = await session.events()
        try await session.open()
        #expect(await session.deviceInformation == WearableProfile.standardDevice)
        #expect(try await session.readSensorInformation() == WearableProfile.standardSensors)
        let readings = await session.sensorReadings()
        try await session.configureSensors { c in
            c.enable(sensor: .accelerometer, at: ._20ms)
            c.enable(sensor: .gyroscope, at: ._20ms)
        }
        let r = await collect(readings, 40)
        #expect(r.count == 40)
        for sensor in [SensorType.accelerometer, .gyroscope] {
            let times = r.filter { $0.sensor == sensor }.map(\.deviceTime)
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 20 }, "\(sensor): \(times)")
        }
        #expect(zip(r, r.dropFirst()).allSatisfy { $0.hostTime <= $1.hostTime })
        #expect(await session.statistics[.accelerometer].gaps == 0)
        await session.close()
        #expect(await collect(events, 4).last == .didClose(nil))
        await server.shutdown()
    }

    /// Over a pseudo-terminal (a serial line's stand-in), through the connector's serial: scheme.
    @Test func aSessionOverAPseudoTerminal() async throws {
        let server = try WearableSimulatorServer(devices: [SimulatedWearable()])
        let pty = try PseudoTerminal.open()
        try server.attach(pty, toDevice: 0)
        let session = WearableDeviceSession(address: .serial(path: pty.slavePath), connector: TransportConnector())
        try await session.open()
        #expect(await session.gestureInformation == WearableProfile.standardGestures)
        let readings = await session.sensorReadings()
        try await session.configureSensors { $0.enable(sensor: .gameRotation, at: ._40ms) }
        let r = await collect(readings, 5)
        #expect(zip(r, r.dropFirst()).allSatisfy { $1.deviceTime - $0.deviceTime == 40 })
        await session.close()
        await server.shutdown()
    }

    @Test func theSimWearableSchemeParsesAndOpens() async throws {
        let schemes = AddressSchemes.builtIn.registering(WearableSimulatorBridge.addressScheme)
        let plain = try schemes.parse("sim:wearable")
        #expect(plain.scheme == "sim:wearable" && plain.description == "sim:wearable")
        let seeded = try schemes.parse("sim:wearable:42")
        #expect(seeded.description == "sim:wearable:42")
        #expect(throws: TransportError.self) { try schemes.parse("sim:wearable:x") }
        #expect(try schemes.parse("sim:/tmp/h.json") == .simulator(statePath: "/tmp/h.json"), "sim:PATH stays the headset")
        let connector = TransportConnector().registering(WearableSimulatorBridge.scheme) { address, _ in
            try WearableSimulatorBridge.open(address)
        }
        let session = WearableDeviceSession(address: seeded, connector: connector)
        try await session.open()
        #expect(await session.deviceInformation?.productID == 0x4020)
        try await session.configureSensors { $0.enable(sensor: .accelerometer, at: ._40ms) }
        await session.close()
        try await session.open()
        #expect(await session.sensorConfiguration?.enabledSensors == [], "the same device, everything disabled again")
        await session.close()
    }
}
