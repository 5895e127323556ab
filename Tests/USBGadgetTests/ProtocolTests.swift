import LightX
import Testing
@testable import USBGadget

@Suite struct SetupPacketTests {
    @Test func parsesLittleEndianFields() throws {
        let s = try #require(SetupPacket(bytes: hexBytes("81 06 00 22 00 00 20 00")))
        #expect(s.requestType == 0x81 && s.request == 0x06)
        #expect(s.value == 0x2200 && s.index == 0 && s.length == 0x20)
        #expect(s.isDeviceToHost)
        #expect(s.bytes == hexBytes("81 06 00 22 00 00 20 00"))
        #expect(s.description == "SETUP 81 06 2200 0000 0020")
        let set = try #require(SetupPacket(bytes: hexBytes("21 09 F1 03 00 00 01 01")))
        #expect(set.value == 0x03F1 && set.length == 257 && !set.isDeviceToHost)
        #expect(SetupPacket(bytes: [0x21, 0x09, 0xF0]) == nil)
    }

    @Test func parsesWholeEventRecordsOnly() {
        let setup = hexBytes("21 0A 00 00 00 00 00 00")
        var bytes: [UInt8] = []
        bytes += [UInt8](repeating: 0, count: 8) + [5, 0, 0, 0]  // SUSPEND
        bytes += [UInt8](repeating: 0, count: 8) + [0, 0, 0, 0]  // BIND
        bytes += [UInt8](repeating: 0, count: 8) + [2, 0, 0, 0]  // ENABLE
        bytes += setup + [4, 0, 0, 0]  // SETUP
        bytes += [UInt8](repeating: 0, count: 8) + [9, 0, 0, 0]  // unknown
        bytes += [1, 2, 3]  // a partial record is ignored
        let events = FunctionFSEvent.parse(bytes)
        #expect(events == [.suspend, .bind, .enable, .setup(SetupPacket(bytes: setup)!), .unknown(9)])
        #expect(FunctionFSEvent.parse([UInt8](repeating: 0, count: 11)).isEmpty)
        #expect(FunctionFSEvent.parse([UInt8](repeating: 0, count: 12) .enumerated().map { $0.offset == 8 ? 3 : $0.element }) == [.disable])
        #expect(FunctionFSEvent.parse([UInt8](repeating: 0, count: 8) + [1, 0, 0, 0]) == [.unbind])
        #expect(FunctionFSEvent.parse([UInt8](repeating: 0, count: 8) + [6, 0, 0, 0]) == [.resume])
    }
}

@Suite struct ResponderTests {
    let empty = ReportMailbox()

    func setup(_ hex: String) -> SetupPacket { SetupPacket(bytes: hexBytes(hex))! }

    /// usbhid's two requests at every attach, answered at any time.
    @Test func answersUsbhidsRequests() {
        let idle = setup("21 0A 00 00 00 00 00 00")
        #expect(EP0Responder.decide(idle, mailbox: empty) == .acknowledge)
        #expect(EP0Responder.call(for: .acknowledge, idle) == .read(count: 0))
        let descriptor = setup("81 06 00 22 00 00 20 00")
        let action = EP0Responder.decide(descriptor, mailbox: empty)
        #expect(action == .write(HIDDescriptors.reportDescriptor, effect: .none))
        #expect(EP0Responder.call(for: action, descriptor) == .write(count: 32))
        // Truncated to wLength.
        #expect(EP0Responder.decide(setup("81 06 00 22 00 00 0A 00"), mailbox: empty)
            == .write(Array(HIDDescriptors.reportDescriptor.prefix(10)), effect: .none))
        // The HID descriptor too.
        #expect(EP0Responder.decide(setup("81 06 00 21 00 00 09 00"), mailbox: empty) == .write(HIDDescriptors.hidDescriptor, effect: .none))
    }

    /// The answer-direction rules: IN → write, OUT with data → read wLength, OUT without → read 0; stall = the
    /// opposite direction with 0 bytes.
    @Test func answerDirections() {
        let getF0 = setup("A1 01 F0 03 00 00 0E 00")
        let setF0 = setup("21 09 F0 03 00 00 0E 00")
        let setF1 = setup("21 09 F1 03 00 00 01 01")
        #expect(EP0Responder.call(for: EP0Responder.decide(getF0, mailbox: empty), getF0) == .write(count: 14))
        #expect(EP0Responder.decide(setF0, mailbox: empty) == .readReport(length: 14, reportID: 0xF0))
        #expect(EP0Responder.call(for: .readReport(length: 14, reportID: 0xF0), setF0) == .read(count: 14))
        #expect(EP0Responder.call(for: EP0Responder.decide(setF1, mailbox: empty), setF1) == .read(count: 257))
        // Stalls.
        #expect(EP0Responder.call(for: .stall, getF0) == .read(count: 0))
        #expect(EP0Responder.call(for: .stall, setF0) == .write(count: 0))
        #expect(EP0Responder.call(for: .stall, setup("21 0B 01 00 00 00 00 00")) == .write(count: 0))
    }

    /// Unknown and malformed requests stall.
    @Test func stallsEverythingElse() {
        let cases = [
            "A1 01 F5 03 00 00 0E 00",  // GET_REPORT of an unknown ID
            "21 09 F5 03 00 00 0E 00",  // SET_REPORT of an unknown ID
            "21 0B 01 00 00 00 00 00",  // SET_PROTOCOL
            "A1 02 00 00 00 00 01 00",  // GET_IDLE
            "A1 03 00 00 00 00 01 00",  // GET_PROTOCOL
            "A1 01 F0 01 00 00 0E 00",  // GET_REPORT of an input report
            "21 09 F0 02 00 00 0E 00",  // SET_REPORT of an output report
            "A1 01 F0 03 01 00 0E 00",  // another interface
            "21 09 F0 03 00 00 0D 00",  // 0xF0 with the wrong length
            "21 09 F0 03 00 00 0F 00",
            "21 09 F1 03 00 00 02 01",  // 0xF1 longer than 257
            "21 09 F1 03 00 00 00 00",  // 0xF1 without data
            "A1 01 F1 03 00 00 01 01",  // GET 0xF1 with nothing announced
            "A1 01 F0 03 00 00 00 00",  // GET with wLength 0
            "21 0A 00 00 00 00 01 00",  // SET_IDLE with data
            "81 06 00 23 00 00 20 00",  // GET_DESCRIPTOR of another type
            "80 06 00 01 00 00 12 00",  // a device-recipient standard request
            "00 09 01 00 00 00 00 00",
        ]
        for hex in cases {
            #expect(EP0Responder.decide(setup(hex), mailbox: empty) == .stall, "\(hex)")
        }
    }

    /// While the device's queue is full SET_REPORT 0xF0 stalls (0xF1 is still taken).
    @Test func fullQueueStallsTheHeaderReport() {
        #expect(EP0Responder.decide(setup("21 09 F0 03 00 00 0E 00"), mailbox: empty, canTakePacket: false) == .stall)
        #expect(EP0Responder.decide(setup("21 09 F1 03 00 00 01 01"), mailbox: empty, canTakePacket: false)
            == .readReport(length: 257, reportID: 0xF1))
    }

    /// GET_REPORT answers come from the mailbox, truncated to wLength, with the mailbox's effect.
    @Test func getReportAnswersFromTheMailbox() {
        var box = ReportMailbox()
        let header: [UInt8] = [0x08, 0x40, 0x81, 0x40, 0, 0, 0, 0xB0, 4, 0, 0, 0]
        let r1 = box.enqueue(header + [1, 2, 3, 4])
        #expect(r1)
        let action = EP0Responder.decide(setup("A1 01 F0 03 00 00 0E 00"), mailbox: box)
        #expect(action == .write([0xF0, 0x01] + header, effect: .announceHead(serial: box.headSerial!)))
        box.commit(.announceHead(serial: box.headSerial!))
        let short = EP0Responder.decide(setup("A1 01 F1 03 00 00 40 00"), mailbox: box)
        guard case .write(let bytes, let effect) = short else {
            Issue.record("expected a write, got \(short)")
            return
        }
        #expect(bytes.count == 64 && bytes.prefix(5) == [0xF1, 1, 2, 3, 4])
        #expect(effect == .removeHead(serial: box.headSerial!))
    }
}

@Suite struct MailboxTests {
    /// A read-battery request as the host builds it (source 0x08, read, command 0xB0, 256-byte zero buffer).
    let batteryRead = RawPacketCodec.encode(AppSettings.batteryLevel.readRequest(.usb))

    @Test func assemblesHeaderAndBuffer() throws {
        var box = ReportMailbox()
        let header = Array(batteryRead.prefix(12))
        #expect(HIDReports.announcedBuffer(try Header(decoding: header)) == 256)
        let buffer = Array(batteryRead.dropFirst(12))
        let r2 = box.receiveSet(reportID: 0xF1, data: [0xF1] + buffer)
        #expect(r2 == nil)
        let assembled = box.receiveSet(reportID: 0xF0, data: [0xF0, 0x00] + header)
        let packet = try #require(assembled)
        #expect(packet == batteryRead)
        let decoded = try RawPacketCodec.decode(packet)
        #expect(decoded.command.rawValue == 0xB0 && decoded.buffer.count == 256)

        // Only param1 bytes of the 256 are used; the buffer is kept for the next header.
        var h = header
        h[8] = 5; h[9] = 0
        let payload: [UInt8] = [9, 8, 7, 6, 5, 4, 3]
        _ = box.receiveSet(reportID: 0xF1, data: [0xF1] + payload + [UInt8](repeating: 0, count: 249))
        let r3 = box.receiveSet(reportID: 0xF0, data: [0xF0, 0x00] + h)
        #expect(r3 == h + [9, 8, 7, 6, 5])
        let r4 = box.receiveSet(reportID: 0xF0, data: [0xF0, 0x00] + h)
        #expect(r4 == h + [9, 8, 7, 6, 5])
        // A short 0xF1 is zero-padded.
        _ = box.receiveSet(reportID: 0xF1, data: [0xF1, 1])
        let r5 = box.receiveSet(reportID: 0xF0, data: [0xF0, 0x00] + h)
        #expect(r5 == h + [1, 0, 0, 0, 0])
    }

    @Test func headersWithoutABufferAndBadHeaders() {
        var box = ReportMailbox()
        var header: [UInt8] = [0x08, 0x40, 0x02, 0x40, 0, 0, 0, 0x85, 0, 0, 0, 0]  // write, no buffer flag
        _ = box.receiveSet(reportID: 0xF1, data: [0xF1] + [UInt8](repeating: 7, count: 256))
        let r6 = box.receiveSet(reportID: 0xF0, data: [0xF0, 0x00] + header)
        #expect(r6 == header)
        header[2] = 0x82  // buffer flag, param1 0
        let r7 = box.receiveSet(reportID: 0xF0, data: [0xF0, 0x00] + header)
        #expect(r7 == header)
        header[8] = 0x01; header[9] = 0x01  // param1 257: cannot be assembled
        let r8 = box.receiveSet(reportID: 0xF0, data: [0xF0, 0x00] + header)
        #expect(r8 == nil)
        let r9 = box.receiveSet(reportID: 0xF0, data: [0xF0, 0x00, 1, 2])
        #expect(r9 == nil)
        let r10 = box.receiveSet(reportID: 0xF2, data: [0xF2] + header)
        #expect(r10 == nil)
        // After a reset the stored buffer is gone: a header with a buffer gets none.
        box.reset()
        header[8] = 4; header[9] = 0
        #expect(box.lastBuffer == nil)
        let r11 = box.receiveSet(reportID: 0xF0, data: [0xF0, 0x00] + header)
        #expect(r11 == header)
    }

    @Test func announcesAndRemovesInOrder() throws {
        var box = ReportMailbox()
        let nothing = try #require(box.answerGet(reportID: 0xF0))
        #expect(nothing.report == [0xF0, 0x00] + [UInt8](repeating: 0, count: 12))
        #expect(nothing.effect == .none)
        #expect(box.answerGet(reportID: 0xF1) == nil)

        let bare: [UInt8] = [0x08, 0x40, 0x02, 0x40, 0, 0, 0, 0x85, 0, 0, 0, 0]
        let withBuffer: [UInt8] = [0x08, 0x40, 0x81, 0x40, 0, 0, 0, 0xB0, 4, 0, 0, 0, 0x55, 0, 0, 0]
        let push: [UInt8] = [0x40, 0x0F, 0x82, 0x80, 0, 0, 0, 0xC1, 4, 0, 0, 0, 9, 9, 9, 9]
        let q12 = [box.enqueue(bare), box.enqueue(withBuffer), box.enqueue(push)]
        #expect(q12 == [true, true, true])
        #expect(box.outgoingCount == 3)

        // A head without a buffer is removed by the 0xF0 answer once delivered.
        let a = try #require(box.answerGet(reportID: 0xF0))
        #expect(a.report == [0xF0, 0x01] + bare)
        #expect(a.effect == .removeHead(serial: box.headSerial!))
        #expect(box.answerGet(reportID: 0xF1) == nil, "nothing announced yet")
        box.commit(a.effect)
        #expect(box.outgoingCount == 2)

        // A head with a buffer is announced; 0xF0 again repeats it; 0xF1 gives the buffer and removes it.
        let b = try #require(box.answerGet(reportID: 0xF0))
        #expect(b.report == [0xF0, 0x01] + Array(withBuffer.prefix(12)))
        box.commit(b.effect)
        #expect(box.isHeadAnnounced && box.outgoingCount == 2)
        #expect(box.answerGet(reportID: 0xF0)?.report == b.report)
        let f1 = try #require(box.answerGet(reportID: 0xF1))
        #expect(f1.report.count == 257)
        #expect(f1.report.prefix(5) == [0xF1, 0x55, 0, 0, 0] && f1.report.dropFirst(5).allSatisfy { $0 == 0 })
        box.commit(f1.effect)
        #expect(!box.isHeadAnnounced && box.outgoingCount == 1)
        // An effect applied twice does nothing more.
        box.commit(f1.effect)
        #expect(box.outgoingCount == 1)

        // The push is next.
        let c = try #require(box.answerGet(reportID: 0xF0))
        #expect(c.report == [0xF0, 0x01] + Array(push.prefix(12)))
        box.commit(c.effect)
        box.commit(try #require(box.answerGet(reportID: 0xF1)).effect)
        #expect(box.isDrained)
        #expect(box.answerGet(reportID: 0xF0)?.report[1] == 0)
    }

    @Test func aResetVoidsEarlierAnswersAndEmptiesEverything() throws {
        var box = ReportMailbox()
        let p: [UInt8] = [0x08, 0x40, 0x81, 0x40, 0, 0, 0, 0xB0, 1, 0, 0, 0, 7]
        let r13 = box.enqueue(p)
        #expect(r13)
        let a = try #require(box.answerGet(reportID: 0xF0))
        box.reset()
        box.commit(a.effect)
        #expect(!box.isHeadAnnounced)
        #expect(box.isDrained)
        let r14 = box.enqueue(p)
        #expect(r14)
        box.commit(a.effect)  // names a packet that is gone
        #expect(!box.isHeadAnnounced && box.outgoingCount == 1)
    }

    @Test func capacityIsEnforced() {
        var box = ReportMailbox(capacity: 3)
        let p = [UInt8](repeating: 0, count: 12)
        let q15 = [box.enqueue(p), box.enqueue(p), box.enqueue(p)]
        #expect(q15 == [true, true, true])
        let r16 = box.enqueue(p)
        #expect(!r16)
        box.commit(box.answerGet(reportID: 0xF0)!.effect)
        let r17 = box.enqueue(p)
        #expect(r17)
        #expect(ReportMailbox(capacity: 0).capacity == 1)
    }

    /// The host's read of the next packet from `box` (its 0xF0 report, and the 0xF1 rest of an announced one); nil
    /// when none is queued.
    static func take(_ box: inout ReportMailbox) throws -> [UInt8]? {
        guard let a = box.answerGet(reportID: 0xF0), a.report[1] == 1 else { return nil }
        box.commit(a.effect)
        var packet = Array(a.report.dropFirst(2))
        if case .announceHead = a.effect {
            let f1 = try #require(box.answerGet(reportID: 0xF1))
            box.commit(f1.effect)
            packet += f1.report.dropFirst().prefix(HIDReports.announcedBuffer(try Header(decoding: packet)))
        }
        return packet
    }

    /// Many packets through the FIFO keep their order (exercises the compaction of the queue).
    @Test func orderSurvivesManyPackets() async throws {
        var box = ReportMailbox(capacity: 300)
        var rng = TestRandom(seed: 4)
        var expected: [[UInt8]] = []
        var received: [[UInt8]] = []
        for round in 0..<2000 {
            await Task.yield()  // a long loop in a debug build: let the cooperative pool's other tasks run
            if rng.next() % 3 != 0 {
                let n = Int(rng.next() % 20)
                var header: [UInt8] = [0x40, 0x08, n > 0 ? 0x81 : 0x01, 0, UInt8(round & 0xFF), UInt8(round >> 8), 0, 0xB0,
                                       UInt8(n), 0, 0, 0]
                header[3] = 0x40
                let p = header + (0..<n).map { UInt8(truncatingIfNeeded: $0 &+ round) }
                if box.enqueue(p) { expected.append(p) }
            } else if let packet = try Self.take(&box) {
                received.append(packet)
            }
        }
        while let packet = try Self.take(&box) { received.append(packet) }
        #expect(received == expected)
        #expect(expected.count > 500)
    }
}
