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

    /// A scheme made up here, in a test module: its parser and opener are registered, Transport is not edited.
    struct EchoEndpoint: Sendable, Equatable {
        var name: String
        var copies: Int
    }

    static let echoScheme = AddressScheme(name: "echo", form: "echo:NAME[*COPIES]", summary: "an in-memory echo") { rest, text throws(TransportError) in
        let parts = rest.split(separator: "*", omittingEmptySubsequences: false)
        guard let name = parts.first, !name.isEmpty, parts.count <= 2, let copies = parts.count == 2 ? Int(parts[1]) : 1, copies > 0 else {
            throw TransportError(.invalidAddress, "bad echo address '\(text)': expected echo:NAME[*COPIES]")
        }
        return .registered(RegisteredAddress(scheme: "echo", text: copies == 1 ? "echo:\(name)" : "echo:\(name)*\(copies)",
                                             value: EchoEndpoint(name: String(name), copies: copies)))
    }

    @Test func aSchemeRegisteredOutsideTransportParsesAndOpens() async throws {
        let schemes = AddressSchemes.builtIn.registering(Self.echoScheme)
        let address = try schemes.parse("echo:bell*2")
        #expect(address.scheme == "echo")
        #expect(address.description == "echo:bell*2")
        #expect(try schemes.parse(address.description) == address)
        #expect(try schemes.parse("echo:bell*1") == schemes.parse("echo:bell"))
        #expect(try schemes.parse("tcp:127.0.0.1:4000") == .tcp(host: "127.0.0.1", port: 4000))
        let bad = await expectTransportError(.invalidAddress) { _ = try schemes.parse("echo:*3") }
        #expect(bad?.message == "bad echo address 'echo:*3': expected echo:NAME[*COPIES]")

        let (near, far) = InMemoryTransport.pair()
        let connector = TransportConnector().registering("echo") { address, context in
            guard case let .registered(registered) = address, let endpoint = registered.value(as: EchoEndpoint.self) else {
                throw TransportError(.invalidAddress, "not an echo address")
            }
            #expect(endpoint == EchoEndpoint(name: "bell", copies: 2))
            #expect(context.connectTimeout == .seconds(5))
            return near
        }
        #expect(connector.canOpen("echo") && connector.canOpen("tcp") && !connector.canOpen("usb"))
        let transport = try await connector.open(address)
        #expect(transport === near)
        try await transport.send([7])
        #expect(try await far.receive() == [7])

        let unsupported = await expectTransportError(.unsupported) { _ = try await TransportConnector().open(address) }
        #expect(unsupported?.message == "'echo' addresses cannot be opened here (echo:bell*2)")
    }

    @Test func aRegisteredOpenerReplacesABuiltInOne() async throws {
        let (near, _) = InMemoryTransport.pair()
        let connector = TransportConnector().registering("tcp") { _, _ in near }
        #expect(try await connector.open(.tcp(host: "192.0.2.1", port: 9)) === near)
    }
}
