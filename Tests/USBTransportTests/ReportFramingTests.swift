import LightX
import Testing
import Transport
@testable import USBTransport

@Suite struct ReportFramingTests {
    /// A USB-style read request with the reference host's default 256-byte zero buffer.
    static func batteryRequest() throws -> [UInt8] {
        RawPacketCodec.encode(try RequestStyle.usb.request(.read, .appBatteryLevel))
    }

    @Test func requestWithABufferIsF1ThenF0() throws {
        let packet = try RawPacketCodec.encode(RequestStyle.usb.request(.write, .appBatteryLevel, argument: [1, 2, 3]))
        let reports = try LightXReports.setReports(for: packet)
        #expect(reports.map(\.id) == [0xF1, 0xF0])
        #expect(reports[0].bytes.count == 257)
        #expect(Array(reports[0].bytes.prefix(4)) == [0xF1, 1, 2, 3])
        #expect(reports[0].bytes.dropFirst(4).allSatisfy { $0 == 0 })
        #expect(reports[1].bytes == [0xF0, 0x00] + packet.prefix(12))
        #expect(reports[1].bytes.count == 14)
        // Header bytes as the sheet gives them for USB: 08 40 82 40, param1 = 3.
        #expect(Array(reports[1].bytes[2...5]) == [0x08, 0x40, 0x82, 0x40])
        #expect(Array(reports[1].bytes[10...13]) == [3, 0, 0, 0])
    }

    @Test func fullBufferFillsReportF1() throws {
        let reports = try LightXReports.setReports(for: Self.batteryRequest())
        #expect(reports.map(\.bytes.count) == [257, 14])
        let argument = (0..<256).map { UInt8($0) }
        let full = try LightXReports.setReports(for: RawPacketCodec.encode(RequestStyle.usb.request(.write, .appBatteryLevel, argument: argument)))
        #expect(Array(full[0].bytes.dropFirst()) == argument)
    }

    @Test func headerOnlyPacketsSkipReportF1() throws {
        let noFlag = Header(source: .usb, destination: .application, opcode: .read, hasBuffer: false, command: .appBatteryLevel, param1: 77)
        #expect(try LightXReports.setReports(for: noFlag.encoded).map(\.id) == [0xF0])
        let emptyBuffer = Header(source: .usb, destination: .application, opcode: .read, hasBuffer: true, command: .appBatteryLevel, param1: 0)
        let reports = try LightXReports.setReports(for: emptyBuffer.encoded)
        #expect(reports.map(\.id) == [0xF0])
        #expect(reports[0].bytes == [0xF0, 0] + emptyBuffer.encoded)
    }

    @Test(arguments: [
        ([UInt8](repeating: 0, count: 11), "needs its 12-byte header"),
        ([], "a 0-byte packet"),
    ])
    func tooShortToSend(packet: [UInt8], fragment: String) {
        let error = thrown { try LightXReports.setReports(for: packet) }
        #expect(error.code == .io)
        #expect(error.message.contains(fragment), "\(error.message)")
    }

    @Test func bufferMustMatchParam1() {
        var header = Header(source: .usb, destination: .application, opcode: .write, hasBuffer: true, command: .appBatteryLevel, param1: 4)
        let mismatch = thrown { try LightXReports.setReports(for: header.encoded + [1, 2]) }
        #expect(mismatch.code == .io)
        #expect(mismatch.message == "cannot send the packet over USB: it carries 2 buffer bytes but its header announces 4 (param1)")
        header.hasBuffer = false
        #expect(thrown { try LightXReports.setReports(for: header.encoded + [1]) }.message
            == "cannot send the packet over USB: it carries 1 buffer bytes but its buffer flag is clear")
        header.hasBuffer = true
        header.param1 = 257
        #expect(thrown { try LightXReports.setReports(for: header.encoded + [UInt8](repeating: 0, count: 257)) }.message
            .contains("257-byte buffer"))
        header.param1 = .max
        #expect(thrown { try LightXReports.setReports(for: header.encoded) }.code == .io)
    }

    @Test func nothingReadyIsNil() throws {
        #expect(try LightXReports.parseHeaderReport([0xF0] + [UInt8](repeating: 0, count: 13)) == nil)
        // Whatever follows a "nothing ready" flag is ignored.
        #expect(try LightXReports.parseHeaderReport([0xF0, 0] + [UInt8](repeating: 0xAA, count: 12)) == nil)
    }

    @Test func readyHeaderIsDecoded() throws {
        let reply = Header(source: .usb, destination: .application, opcode: .read, hasBuffer: true, status: .ok,
                           type: .result, command: .appBatteryLevel, param1: 4)
        let header = try LightXReports.parseHeaderReport([0xF0, 0x01] + reply.encoded)
        #expect(header == reply)
        // A longer answer (some hosts ask for 64 bytes) is fine: the first 14 count.
        #expect(try LightXReports.parseHeaderReport([0xF0, 0x01] + reply.encoded + [9, 9]) == reply)
    }

    @Test func shortOrForeignHeaderReportsFail() {
        let short = thrown { try LightXReports.parseHeaderReport([0xF0, 1, 8, 0x40, 0x81]) }
        #expect(short.code == .io)
        #expect(short.message == "short report 0xF0: got 5 of 14 bytes")
        #expect(thrown { try LightXReports.parseHeaderReport([]) }.message == "short report 0xF0: got 0 of 14 bytes")
        #expect(thrown { try LightXReports.parseHeaderReport([0xF1] + [UInt8](repeating: 0, count: 13)) }.message
            == "report 0xF0 came back with report id 0xF1")
        let huge = Header(source: .application, destination: .usb, opcode: .read, hasBuffer: true, command: .appBatteryLevel, param1: 300)
        #expect(thrown { try LightXReports.parseHeaderReport([0xF0, 1] + huge.encoded) }.message
            == "report 0xF0 announces a 300-byte buffer; report 0xF1 holds at most 256")
    }

    @Test func packetIsHeaderPlusParam1BytesOfF1() throws {
        let request = try RequestStyle.usb.request(.read, .appBatteryLevel)
        let reply = try Packet.reply(to: request, buffer: [87, 0, 0, 0], swapModules: false)
        let header = reply.header
        let f1 = [0xF1, 87, 0, 0, 0] + [UInt8](repeating: 0xEE, count: 252)
        let packet = try LightXReports.packet(header: header, bufferReport: f1)
        #expect(packet == RawPacketCodec.encode(reply))
        #expect(try RawPacketCodec.decode(packet) == reply)
        // No buffer announced: the header alone, whatever report 0xF1 held.
        var bare = header
        bare.hasBuffer = false
        #expect(try LightXReports.packet(header: bare, bufferReport: []) == bare.encoded)
    }

    @Test func shortOrForeignBufferReportsFail() throws {
        let header = Header(source: .usb, destination: .application, opcode: .read, hasBuffer: true, command: .appBatteryLevel, param1: 200)
        let short = thrown { try LightXReports.packet(header: header, bufferReport: [0xF1] + [UInt8](repeating: 1, count: 100)) }
        #expect(short.code == .io)
        #expect(short.message == "short report 0xF1: got 101 bytes, the header announced 200 buffer bytes (201 with the report id)")
        #expect(thrown { try LightXReports.packet(header: header, bufferReport: [0xF0] + [UInt8](repeating: 1, count: 256)) }.message
            == "report 0xF1 came back with report id 0xF0")
    }

    @Test func onlyFinalRepliesCount() throws {
        let request = try RequestStyle.usb.request(.read, .appBatteryLevel)
        #expect(LightXReports.isFinalReply(try Packet.reply(to: request, buffer: [1], swapModules: false).header))
        #expect(!LightXReports.isFinalReply(try Packet.reply(to: request, status: .pending, swapModules: false).header))
        #expect(!LightXReports.isFinalReply(try Packet.push(Command(rawValue: 0xC3), payload: [1]).header))
        #expect(!LightXReports.isFinalReply(try Packet.push(Command(rawValue: 0xFF), payload: []).header))
    }

    @Test func controlRequestsMatchTheContract() {
        let set = ControlRequest.setReport([0xF1] + [UInt8](repeating: 0, count: 256))
        #expect((set.requestType, set.request, set.value, set.index, set.length) == (0x21, 0x09, 0x03F1, 0, 257))
        #expect(set.label == "SET_REPORT 0xF1" && !set.isIn)
        let get = ControlRequest.getReport(0xF0, length: 14)
        #expect((get.requestType, get.request, get.value, get.index, get.length) == (0xA1, 0x01, 0x03F0, 0, 14))
        #expect(get.label == "GET_REPORT 0xF0" && get.isIn)
    }
}

@Suite struct PollScheduleTests {
    @Test func adaptivePollsAtOnceThenDoublesUpTo20ms() {
        let delays = (0..<11).map { PollSchedule.adaptive.delay(afterEmptyPolls: $0) }
        #expect(delays == [0, 0, 0, 1, 2, 4, 8, 16, 20, 20, 20].map { Duration.milliseconds($0) })
        #expect(PollSchedule.adaptive.delay(afterEmptyPolls: -5) == .zero)
        #expect(PollSchedule.adaptive.delay(afterEmptyPolls: .max) == .milliseconds(20))
    }

    @Test func fixedSleepsBeforeEveryPoll() {
        let fixed = PollSchedule.fixed(.milliseconds(50))
        #expect([0, 1, 7, .max].map { fixed.delay(afterEmptyPolls: $0) } == Array(repeating: .milliseconds(50), count: 4))
    }

    @Test func intervalPicksTheSchedule() {
        #expect(PollSchedule(interval: nil) == .adaptive)
        #expect(PollSchedule(interval: .zero) == .adaptive)
        #expect(PollSchedule(interval: .milliseconds(-1)) == .adaptive)
        #expect(PollSchedule(interval: .milliseconds(50)) == .fixed(.milliseconds(50)))
    }
}
