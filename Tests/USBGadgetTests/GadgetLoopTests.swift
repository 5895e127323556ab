import Glibc
import LightX
import Testing
import Transport
@testable import USBGadget

/// The whole gadget — ep0 thread, events, SETUP answers, mailbox, links, commands, teardown — against the fake
/// configfs and a fake ep0 driven by `FakeHost`.
@Suite struct GadgetLoopTests {
    struct Rig {
        let gadget: USBGadget
        let fs: FakeGadgetSystem
        let host: FakeHost
    }

    func start() async throws -> Rig {
        let fs = FakeGadgetSystem()
        let gadget = try await USBGadget.start(.fake(), system: fs, logger: nil)
        return Rig(gadget: gadget, fs: fs, host: FakeHost(fd: fs.hostEnd))
    }

    /// BIND and ENABLE as after a bind, then the link.
    func attach(_ rig: Rig) async throws -> any Transport {
        try rig.host.events([(FakeHost.suspend, SetupPacket(requestType: 0, request: 0, value: 0, index: 0, length: 0)),
                             (FakeHost.bind, SetupPacket(requestType: 0, request: 0, value: 0, index: 0, length: 0))])
        try rig.host.event(FakeHost.enable)
        return try await withTimeLimit { try await rig.gadget.accept() }
    }

    static let usb = RequestStyle.usb

    @Test func servesTheReportContract() async throws {
        try await withTimeLimit {
            let rig = try await start()
            #expect(rig.gadget.endpoint == "usb:1209:0001:TS1-000001")
            #expect(rig.gadget.isAttached && rig.gadget.udc == "dummy_udc.0")
            let link = try await attach(rig)
            #expect(link.framing == .packets)
            #expect(link.peerDescription == "usb-host:tuneup/1")

            // usbhid's requests.
            #expect(try await rig.host.request(SetupPacket(bytes: hexBytes("21 0A 00 00 00 00 00 00"))!) == .readZero)
            #expect(try await rig.host.request(SetupPacket(bytes: hexBytes("81 06 00 22 00 00 20 00"))!)
                == .data(HIDDescriptors.reportDescriptor))

            // A request with a buffer, as the host sends it.
            let request = RawPacketCodec.encode(AppSettings.batteryLevel.readRequest(Self.usb))
            try await rig.host.sendPacket(request)
            #expect(try await link.receive() == request)
            // One without a buffer flag.
            let bare = Array(request.prefix(12)).enumerated().map { $0.offset == 2 ? 0x01 : $0.element }
            try await rig.host.sendPacket(bare)
            #expect(try await link.receive() == bare)

            // Nothing ready, then a reply with a buffer and a push without one, in order.
            #expect(try await rig.host.poll() == nil)
            let reply = RawPacketCodec.encode(try Packet.reply(to: try RawPacketCodec.decode(request), buffer: [87, 0, 0, 0], swapModules: false))
            let push: [UInt8] = [0x40, 0x0F, 0x02, 0x40, 0, 0, 0, 0xC1, 0, 0, 0, 0]
            try await link.send(reply)
            try await link.send(push)
            #expect(try await rig.host.receivePacket() == reply)
            #expect(try await rig.host.receivePacket() == push)
            #expect(try await rig.host.poll() == nil)

            // Stalls.
            #expect(try await rig.host.getReport(0xF5, length: 14) == nil)
            #expect(try await rig.host.setReport(0xF5, [0xF5] + [UInt8](repeating: 0, count: 13)) == false)
            #expect(try await rig.host.getReport(0xF1, length: 257) == nil)
            #expect(try await rig.host.request(SetupPacket(bytes: hexBytes("21 0B 01 00 00 00 00 00"))!) == .writeZero)
            // Still serving afterwards.
            #expect(try await rig.host.poll() == nil)

            // A malformed outgoing packet is refused.
            await #expect(throws: TransportError(.io, "")) { try await link.send([1, 2, 3]) }
            await #expect(throws: TransportError(.io, "")) { try await link.send([UInt8](repeating: 0, count: 269)) }

            let stats = rig.gadget.statistics
            #expect(stats.attachments == 1 && stats.packetsReceived == 2 && stats.packetsFetched == 2)
            #expect(stats.stalls == 4)
            await rig.gadget.shutdown()
        }
    }

    @Test func everyAttachmentGetsItsOwnLink() async throws {
        try await withTimeLimit {
            let rig = try await start()
            let first = try await attach(rig)
            try await first.send([UInt8](repeating: 0, count: 12))  // never fetched: dropped with the attachment
            // The host sets the configuration again: a new attachment.
            try rig.host.event(FakeHost.enable)
            let second = try await rig.gadget.accept()
            await #expect(throws: TransportError(.closed, "")) { try await first.receive() }
            await #expect(throws: TransportError(.closed, "")) { try await first.send([UInt8](repeating: 0, count: 12)) }
            #expect(try await rig.host.poll() == nil, "the old attachment's packet is gone")
            #expect(second.peerDescription == "usb-host:tuneup/2")

            // Packets received before the end are still delivered, then .closed.
            try await rig.host.sendPacket([UInt8](repeating: 0, count: 12))
            try rig.host.event(FakeHost.disable)
            #expect(try await second.receive() == [UInt8](repeating: 0, count: 12))
            await #expect(throws: TransportError(.closed, "")) { try await second.receive() }

            // BIND and UNBIND end attachments too.
            try rig.host.event(FakeHost.enable)
            let third = try await rig.gadget.accept()
            try rig.host.event(FakeHost.unbind)
            await #expect(throws: TransportError(.closed, "")) { try await third.receive() }
            await rig.gadget.shutdown()
        }
    }

    @Test func eidrmIsIgnored() async throws {
        try await withTimeLimit {
            let rig = try await start()
            _ = try await attach(rig)
            try rig.host.cancelledSetup()
            #expect(try await rig.host.request(SetupPacket(bytes: hexBytes("21 0A 00 00 00 00 00 00"))!) == .readZero)
            try rig.host.cancelledSetup()
            #expect(try await rig.host.poll() == nil)
            #expect(rig.gadget.statistics.cancelledSetups == 2)
            await rig.gadget.shutdown()
        }
    }

    @Test func deviceSideCloseDropsQueuedPacketsAndDiscardsTheHostsUntilTheNextAttachment() async throws {
        try await withTimeLimit {
            let rig = try await start()
            let link = try await attach(rig)
            try await link.send([UInt8](repeating: 1, count: 12))
            await link.close()
            await #expect(throws: TransportError(.closed, "")) { try await link.receive() }
            #expect(try await rig.host.poll() == nil)
            try await rig.host.sendPacket([UInt8](repeating: 2, count: 12))
            #expect(try await rig.host.nothingElseAnswered())
            #expect(rig.gadget.statistics.packetsDiscarded == 1)
            try rig.host.event(FakeHost.enable)
            let next = try await rig.gadget.accept()
            try await rig.host.sendPacket([UInt8](repeating: 3, count: 12))
            #expect(try await next.receive() == [UInt8](repeating: 3, count: 12))
            await rig.gadget.shutdown()
        }
    }

    /// The reply to the command that caused the reset is fetched before the unbind; then the identity changes.
    @Test func reenumerationLetsTheHostFetchTheReplyFirst() async throws {
        try await withTimeLimit {
            let rig = try await start()
            let link = try await attach(rig)
            let reply: [UInt8] = [0x08, 0x40, 0x02, 0x00, 0, 0, 0, 0x25, 0, 0, 0, 0]
            try await link.send(reply)
            rig.fs.clearLog()
            let gadget = rig.gadget
            // An hour's drain timeout: the host below fetches as soon as the reset waits, however slow the machine, and a
            // reset that waited it out would trip the test's time limit.
            let reset = Task {
                try await gadget.reenumerate(productID: 0x0002, product: "Tuneup Sim Headset (bootloader)", drainTimeout: .seconds(3600))
            }
            let unbound = { rig.fs.log.contains { $0.hasSuffix("/UDC=\n") } }
            try await waitUntil("the reset waits for the host (or unbinds at once)") { gadget.isWaitingForDrain || unbound() }
            #expect(!unbound(), "no unbind before the host fetched the reply")
            #expect(try await rig.host.receivePacket() == reply)
            let took = try await reset.value
            let G = "/cfg/usb_gadget/tuneup"
            #expect(rig.fs.log == ["write \(G)/UDC=\n", "write \(G)/idProduct=0x0002",
                                   "write \(G)/strings/0x409/product=Tuneup Sim Headset (bootloader)", "write \(G)/UDC=dummy_udc.0"])
            await #expect(throws: TransportError(.closed, "")) { try await link.receive() }
            #expect(gadget.endpoint == "usb:1209:0002:TS1-000001" && gadget.productID == 2)
            #expect(gadget.product == "Tuneup Sim Headset (bootloader)" && gadget.isAttached)
            #expect(gadget.statistics.reenumerations == 1 && gadget.statistics.lastReenumerationTime == took)

            // A host that never fetches does not hold the reset up for longer than drainTimeout.
            try rig.host.event(FakeHost.enable)
            let second = try await gadget.accept()
            try await second.send(reply)
            let start = ContinuousClock.now
            try await gadget.reenumerate(productID: 0x0001, product: "Tuneup Sim Headset", drainTimeout: .milliseconds(100))
            #expect(ContinuousClock.now - start >= .milliseconds(100))
            #expect(gadget.endpoint == "usb:1209:0001:TS1-000001")
            // Invalid identities are refused before anything happens.
            await #expect(throws: TransportError(.invalidAddress, "")) { try await gadget.reenumerate(productID: 2, product: "a\nb") }
            await gadget.shutdown()
        }
    }

    @Test func detachAndAttach() async throws {
        try await withTimeLimit {
            let rig = try await start()
            let link = try await attach(rig)
            rig.fs.clearLog()
            try await rig.gadget.detach()
            #expect(!rig.gadget.isAttached)
            await #expect(throws: TransportError(.closed, "")) { try await link.receive() }
            try await rig.gadget.detach()  // idempotent
            try await rig.gadget.attach()
            try await rig.gadget.attach()
            #expect(rig.gadget.isAttached)
            #expect(rig.fs.log == ["write /cfg/usb_gadget/tuneup/UDC=\n", "write /cfg/usb_gadget/tuneup/UDC=dummy_udc.0"])
            // While detached, a reenumerate ends attached.
            try await rig.gadget.detach()
            try await rig.gadget.reenumerate(productID: 2, settle: .zero)
            #expect(rig.gadget.isAttached && rig.gadget.productID == 2 && rig.gadget.product == "Tuneup Sim Headset")
            await rig.gadget.shutdown()
        }
    }

    @Test func sendWaitsWhileTheFIFOIsFull() async throws {
        try await withTimeLimit {
            let rig = try await start()
            let link = try await attach(rig)
            let packet = [UInt8](repeating: 0, count: 12)
            for _ in 0..<256 { try await link.send(packet) }
            let blocked = Task { try await link.send([7] + [UInt8](repeating: 0, count: 11)) }
            try await waitUntil("the send waits for room") { rig.gadget.pendingSends == 1 }
            #expect(try await rig.host.receivePacket() == packet)
            try await blocked.value
            // A waiting send is released with .closed when the attachment ends.
            let again = Task { try await link.send(packet) }
            try await waitUntil("the send waits for room") { rig.gadget.pendingSends == 1 }
            try rig.host.event(FakeHost.disable)
            await #expect(throws: TransportError(.closed, "")) { try await again.value }
            // ... and a cancelled one with CancellationError.
            try rig.host.event(FakeHost.enable)
            let next = try await rig.gadget.accept()
            for _ in 0..<256 { try await next.send(packet) }
            let cancelled = Task { try await next.send(packet) }
            try await waitUntil("the send waits for room") { rig.gadget.pendingSends == 1 }
            cancelled.cancel()
            await #expect(throws: CancellationError.self) { try await cancelled.value }
            await rig.gadget.shutdown()
        }
    }

    @Test func aCancelledReceiveLosesNothing() async throws {
        try await withTimeLimit {
            let rig = try await start()
            let link = try await attach(rig)
            let waiting = Task { try await link.receive() }
            let gadgetLink = try #require(link as? GadgetLink)
            try await waitUntil("the receive waits for a packet") { gadgetLink.hasPendingReceive }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }
            try await rig.host.sendPacket([UInt8](repeating: 5, count: 12))
            #expect(try await link.receive() == [UInt8](repeating: 5, count: 12))
            await rig.gadget.shutdown()
        }
    }

    @Test func shutdownRemovesTheGadgetAndEndsEverything() async throws {
        try await withTimeLimit {
            let rig = try await start()
            let link = try await attach(rig)
            let gadget = rig.gadget
            let accepting = Task { try await gadget.accept() }
            try await waitUntil("accept() waits for an attachment") { gadget.hasPendingAccept }
            rig.fs.clearLog()
            await gadget.shutdown()
            await #expect(throws: TransportError(.closed, "")) { try await accepting.value }
            await #expect(throws: TransportError(.closed, "")) { try await link.receive() }
            await #expect(throws: TransportError(.closed, "")) { try await gadget.accept() }
            await #expect(throws: TransportError(.closed, "")) { try await gadget.reenumerate(productID: 2) }
            await #expect(throws: TransportError(.closed, "")) { try await gadget.detach() }
            #expect(rig.fs.log.first == "write /cfg/usb_gadget/tuneup/UDC=\n")
            #expect(rig.fs.log.contains("close ep0") && rig.fs.log.last == "rmdir /cfg/usb_gadget/tuneup")
            #expect(rig.fs.entries(under: "/cfg/usb_gadget").isEmpty && !rig.fs.exists("/dev/ffs-tuneup"))
            #expect(gadget.isClosed && !gadget.isAttached)
            gadget.close()
            await gadget.shutdown()  // idempotent
        }
    }

    @Test func droppingTheGadgetTearsItDown() async throws {
        try await withTimeLimit {
            let fs = FakeGadgetSystem()
            do {
                _ = try await USBGadget.start(.fake(), system: fs, logger: nil)
            }
            try await waitUntil("the dropped gadget is torn down") { !fs.exists("/cfg/usb_gadget/tuneup") }
            #expect(!fs.exists("/cfg/usb_gadget/tuneup"))
        }
    }
}
