import LightX
import Transport

// Host links: accepting a link, decoding its requests, and ending it.
extension SimulatedHeadset {
    /// Serves one host link until it closes, the device loses power, or `shutdown()`: decodes the requests — SPP
    /// frames on a `.byteStream` link (skipping garbage), one raw LightX packet per message on a `.packets` link
    /// (skipping messages that do not decode) —, queues each request, and sends replies and pushes in the link's
    /// format (see the type's description). Closes the link when done. A link offered while the device is off or shut
    /// down is closed at once. Never throws.
    public func serve(_ transport: any Transport) async {
        guard let id = register(transport) else {
            await transport.close()
            return
        }
        await run(id)
    }

    /// Opens a new in-memory link (SPP byte stream) to this running device and serves it; returns the host's end.
    /// While the device is off or shut down the link is closed at once (the host's `receive` throws `.closed`).
    public func connect() -> any Transport {
        let (host, deviceEnd) = InMemoryTransport.pair(framing: .byteStream)
        if let id = register(deviceEnd) {
            Task { await self.run(id) }
        } else {
            Task { await deviceEnd.close() }
        }
        return host
    }

    /// The running image as it changes: first the current one, then every change — nil when the device loses power
    /// (power cut, reboot, injected cut), the image that boots when it powers up, `.bootloader`/`.application` on a
    /// jump. A jump is reported once its reply has been handed to the requesting link (a USB gadget following this
    /// stream re-enumerates only after the host can fetch that reply); a power loss at once. Consecutive equal
    /// values are not repeated. The stream finishes at `shutdown()`. Any number of observers; each gets every change.
    public nonisolated func modeChanges() -> AsyncStream<RunningImage?> {
        modes.stream()
    }

    private func register(_ transport: any Transport) -> UInt64? {
        guard service.acceptsLink(powered: machine.isPowered) else { return nil }
        let link = shaping.shape(transport, number: hosts.nextLinkID)
        startBatteryTimer()
        let id = hosts.add(HostLink(link: link, replyDelay: shaping.replyDelay))
        logger?.debug("device \(index): host connected on \(link.peerDescription)")
        return id
    }

    private func run(_ id: UInt64) async {
        guard let host = hosts[id] else { return }
        let link = host.link
        var decoder = RequestDecoder(framing: host.framing)
        receiving: while !service.isShutDown, hosts[id] != nil {
            let chunk: [UInt8]
            do {
                chunk = try await link.receive()
            } catch {
                break
            }
            if !decoder.append(chunk) {
                logger?.debug("device \(index): skipped an undecodable \(chunk.count)-byte packet on \(link.peerDescription)")
                continue
            }
            while let request = decoder.next() {
                await submit(request, from: id)
                if hosts[id] == nil { break receiving }
            }
        }
        hosts.remove(id)
        machine.linkClosed(id)
        host.finish()
        await host.drainAndClose()
        logger?.debug("device \(index): host on \(link.peerDescription) disconnected (\(decoder.summary))")
    }
}
