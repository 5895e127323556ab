import Testing
@testable import Transport

@Suite struct TransportConnectorTests {
    @Test func opensTCP() async throws {
        try await withTimeLimit {
            let listener = try await TCPListener.bind()
            defer { listener.close() }
            async let accepted = listener.accept()
            let transport = try await TransportConnector().open(listener.boundAddress)
            let server = try await accepted
            #expect(transport.peerDescription == listener.boundAddress.description)
            try await transport.send([1, 2])
            #expect(try await receiveExactly(2, from: server) == [1, 2])
            await transport.close()
            await server.close()
        }
    }

    @Test func reportsRefusedTCP() async throws {
        let listener = try await TCPListener.bind()
        let address = listener.boundAddress
        listener.close()
        let error = await expectTransportError(.connectionRefused) { _ = try await TransportConnector().open(address) }
        #expect(error?.message == "cannot connect to \(address): connection refused")
    }

    @Test func opensSerialPaths() async throws {
        try await withTimeLimit {
            let pty = try PseudoTerminal.open()
            defer { pty.close() }
            async let accepted = pty.accept()
            let transport = try await TransportConnector().open(try DeviceAddress(parsing: "serial:\(pty.slavePath)"))
            let session = try await accepted
            #expect(transport.peerDescription == "serial:\(pty.slavePath)")
            try await session.send([0x0D, 0x0A])
            #expect(try await receiveExactly(2, from: transport) == [0x0D, 0x0A])
            await transport.close()
            await session.close()
        }
    }

    @Test func simulatorWithoutAClosureIsUnsupported() async {
        let error = await expectTransportError(.unsupported) { _ = try await TransportConnector().open(.simulator(statePath: nil)) }
        #expect(error?.message == "the built-in simulator is not available here")
    }

    @Test func simulatorClosureGetsTheStatePath() async throws {
        let (near, far) = InMemoryTransport.pair()
        let connector = TransportConnector { path in
            #expect(path == "/tmp/state.json")
            return near
        }
        let transport = try await connector.open(try DeviceAddress(parsing: "sim:/tmp/state.json"))
        #expect(transport === near)
        try await transport.send([3])
        #expect(try await far.receive() == [3])
        let nilPath = TransportConnector(simulator: { path in
            #expect(path == nil)
            return far
        })
        #expect(try await nilPath.open(.simulator(statePath: nil)) === far)
    }

    @Test(arguments: [
        ("usb:1d6b:0104", "USB is not available here (usb:1d6b:0104)"),
        ("usb:1-2.3", "USB is not available here (usb:1-2.3)"),
        ("bt:00:1A:7D:DA:71:13", "Bluetooth is not available here (bt:00:1A:7D:DA:71:13)"),
        ("bt:00:1A:7D:DA:71:13:3", "Bluetooth is not available here (bt:00:1A:7D:DA:71:13:3)"),
    ])
    func usbAndBluetoothNeedTheirOpeners(text: String, message: String) async throws {
        let address = try DeviceAddress(parsing: text)
        let error = await expectTransportError(.unsupported) { _ = try await TransportConnector().open(address) }
        #expect(error?.message == message)
    }

    @Test func usbAndBluetoothOpenersReceiveTheirAddresses() async throws {
        let (near, _) = InMemoryTransport.pair()
        let connector = TransportConnector(
            usb: { address in
                guard case .usb(0x1209, 0x0001, "S1") = address else { throw TransportError(.notFound, "wrong address") }
                return near
            },
            bluetooth: { address in
                guard case .bluetooth(_, 3) = address else { throw TransportError(.notFound, "wrong address") }
                return near
            })
        #expect(try await connector.open(DeviceAddress(parsing: "usb:1209:0001:S1")) === near)
        #expect(try await connector.open(DeviceAddress(parsing: "bt:00:AA:01:00:00:00:3")) === near)
        await expectTransportError(.notFound) { _ = try await connector.open(DeviceAddress(parsing: "usb:1209:0002")) }
    }

    @Test func wrapsInLinkConditionsWhenAsked() async throws {
        let (near, far) = InMemoryTransport.pair()
        var connector = TransportConnector(simulator: { _ in near })
        connector.linkConditions = try LinkConditions(parsing: "latency=1ms,seed=3")
        let transport = try await connector.open(.simulator(statePath: nil))
        let conditioned = try #require(transport as? ConditionedTransport)
        #expect(conditioned.conditions.seed == 3)
        #expect(conditioned.inner === near)
        try await transport.send([1])
        #expect(try await far.receive() == [1])
        await transport.close()
    }

    @Test func connectTimeoutIsUsed() {
        #expect(TransportConnector().connectTimeout == .seconds(5))
        #expect(TransportConnector(connectTimeout: .milliseconds(250)).connectTimeout == .milliseconds(250))
    }
}
