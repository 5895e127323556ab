import CBluetooth
import Glibc
import Testing
@testable import BluetoothTransport

/// The SPP record the listener registers, checked with libbluetooth's own parsers (no SDP server needed).
@Suite struct SDPRecordTests {
    @Test(arguments: [1, 5, 30] as [UInt8])
    func sppRecordCarriesTheChannelAndClass(channel: UInt8) throws {
        let record = try #require(SDP.makeSerialPortRecord(channel: channel, name: "Tuneup Headset", provider: "Tuneup", description: "test"))
        // The same extraction the client runs on search results.
        #expect(SDP.rfcommChannel(of: record.raw) == channel)
        #expect(SDP.hasServiceClass(record.raw, 0x1101))
        #expect(!SDP.hasServiceClass(record.raw, 0x1108))

        var name = [CChar](repeating: 0, count: 64)
        #expect(sdp_get_service_name(record.raw, &name, Int32(name.count)) == 0)
        #expect(String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) == "Tuneup Headset")
    }

    @Test func sppRecordSurvivesTheWireFormat() throws {
        let record = try #require(SDP.makeSerialPortRecord(channel: 7, name: "Tuneup Headset", provider: "Tuneup", description: "test"))
        // Serialise as sdp_record_register sends it, parse as a client receives it.
        var pdu = sdp_buf_t()
        #expect(sdp_gen_record_pdu(record.raw, &pdu) == 0)
        defer { free(pdu.data) }
        #expect(pdu.data_size > 20)
        var scanned: Int32 = 0
        let parsed = try #require(sdp_extract_pdu(pdu.data, Int32(pdu.data_size), &scanned))
        defer { sdp_record_free(parsed) }
        #expect(scanned == Int32(pdu.data_size))
        #expect(SDP.rfcommChannel(of: parsed) == 7)
        #expect(SDP.hasServiceClass(parsed, 0x1101))

        // Profile descriptor: Serial Port, version 1.2.
        var profiles: UnsafeMutablePointer<sdp_list_t>?
        #expect(sdp_get_profile_descs(parsed, &profiles) == 0)
        defer { sdp_list_free(profiles, { free($0) }) }
        let first = try #require(profiles?.pointee.data?.assumingMemoryBound(to: sdp_profile_desc_t.self))
        #expect(first.pointee.uuid.value.uuid16 == 0x1101)
        #expect(first.pointee.version == 0x0102)

        // Browsable: in the public browse group.
        var groups: UnsafeMutablePointer<sdp_list_t>?
        #expect(sdp_get_browse_groups(parsed, &groups) == 0)
        defer { sdp_list_free(groups, { free($0) }) }
        #expect(groups?.pointee.data?.assumingMemoryBound(to: uuid_t.self).pointee.value.uuid16 == 0x1002)
    }

    @Test func recordWithoutRFCOMMHasNoChannel() throws {
        let record = try #require(sdp_record_alloc())
        defer { sdp_record_free(record) }
        #expect(SDP.rfcommChannel(of: record) == nil)
        #expect(!SDP.hasServiceClass(record, 0x1101))
    }

    @Test func manyRecordsDoNotLeak() throws {
        // Build and free records repeatedly: a leak of the temporary lists would show up under a leak checker;
        // here it checks that building is repeatable and every record is complete.
        for channel in 1...30 {
            let record = try #require(SDP.makeSerialPortRecord(channel: UInt8(channel), name: "n", provider: "p", description: "d"))
            #expect(SDP.rfcommChannel(of: record.raw) == UInt8(channel))
        }
    }
}
