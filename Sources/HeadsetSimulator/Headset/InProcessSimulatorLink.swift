import Transport

/// The host end of an in-process simulator (see `SimulatorServer.inProcess(statePath:options:)`).
public final class InProcessSimulatorLink: Transport {
    /// `sim` or `sim:PATH`.
    public let peerDescription: String
    /// Always `.byteStream` (SPP framing).
    public var framing: LinkFraming { inner.framing }
    /// The simulated device behind the link (for pressing buttons, power cuts and statistics in tests and tools).
    public var device: SimulatedHeadset { server.devices[0] }

    private let inner: any Transport
    private let server: SimulatorServer
    private let serving: Task<Void, Never>

    init(inner: any Transport, server: SimulatorServer, serving: Task<Void, Never>, peerDescription: String) {
        self.inner = inner
        self.server = server
        self.serving = serving
        self.peerDescription = peerDescription
    }

    /// See `Transport.send(_:)`.
    public func send(_ bytes: [UInt8]) async throws { try await inner.send(bytes) }
    /// See `Transport.receive()`.
    public func receive() async throws -> [UInt8] { try await inner.receive() }

    /// Opens another link to the same running device (e.g. to reconnect after a power cut closed this one). Links
    /// opened this way stay usable until they are closed, the device loses power, or this link is closed.
    public func connect() async -> any Transport {
        await device.connect()
    }

    /// Closes the link, then stops the device (storing its running state) and waits until it has released its state
    /// file. Idempotent.
    public func close() async {
        await inner.close()
        await serving.value
        await server.shutdown()
    }
}
