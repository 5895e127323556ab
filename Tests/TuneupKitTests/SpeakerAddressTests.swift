import Failure
import Session
import SpeakerSession
import TestSupport
import Testing
import Transport
import TuneupKit

/// Speakers in the address registry: `speaker:HOST:PORT`, `tcp:HOST:PORT` and `sim:speaker[:SEED]`, opened through the
/// connector like every other family.
@Suite struct SpeakerAddressTests {
    @Test func speakerAddressesParseThroughTheRegistry() throws {
        let endpoint = SpeakerEndpoint(host: "127.0.0.1", port: 4000)
        #expect(try Devices.parseAddress("speaker:127.0.0.1:4000") == SpeakerBridge.address(endpoint))
        // HOST:PORT alone (what the speaker commands always took) is speaker:HOST:PORT.
        #expect(try Devices.parseSpeakerAddress("127.0.0.1:4000") == SpeakerBridge.address(endpoint))
        #expect(try Devices.parseSpeakerAddress("[::1]:4000").description == "speaker:[::1]:4000")
        #expect(try Devices.parseSpeakerAddress("tcp:127.0.0.1:4000") == .tcp(host: "127.0.0.1", port: 4000))
        #expect(try Devices.parseSpeakerAddress("sim:speaker").description == "sim:speaker")
        #expect(try Devices.parseSpeakerAddress("sim:speaker:7").description == "sim:speaker:7")
        #expect(SpeakerBridge.endpoint(of: try Devices.parseSpeakerAddress("tcp:h:9")) == SpeakerEndpoint(host: "h", port: 9))
        #expect(SpeakerBridge.endpoint(of: try Devices.parseSpeakerAddress("sim:speaker")) == nil)
        // Bad or unknown addresses, and other families' addresses, are one line each.
        for text in ["nowhere", "speaker:h:0", "speaker:h", "a:b:1", "h:70000", "sim:speaker:x", "sim", "usb:1209:0001", "sim:wearable"] {
            do {
                let parsed = try Devices.parseSpeakerAddress(text)
                Issue.record("\(text) parsed as \(parsed)")
            } catch {
                #expect(error.code == .invalidAddress && !error.message.isEmpty && !error.message.contains("\n"), "\(text): \(error.message)")
            }
        }
    }

    @Test func opensTheSimulatedSpeakerByAddress() async throws {
        try await withTimeLimit {
            let session = try await Devices.openSpeaker(try Devices.parseSpeakerAddress("sim:speaker:5"))
            let info = try await session.deviceInfo()
            await session.close()
            #expect(info.deviceId == session.deviceId && info.ipAddress.value == "127.0.0.1")
        }
    }

    /// The connector's link conditions reach a speaker's control link: a link that goes down after 8 bytes never
    /// carries the hello (without the conditioner the same open succeeds, as the first half shows).
    @Test func theLinkConditionerAppliesToSpeakerAddresses() async throws {
        try await withTimeLimit {
            let address = try Devices.parseSpeakerAddress("sim:speaker:6")
            // Only the link's failure can end the hello: no retransmission, an hour's timeout.
            let patient = RequestOptions(timeout: .seconds(3600), retransmissions: 0)
            let perfect = try await Devices.openSpeaker(address, requestOptions: patient)
            await perfect.close()
            let conditions = LinkConditions(disconnectAfterBytes: 8)
            do {
                let session = try await Devices.openSpeaker(address, options: ConnectionOptions(linkConditions: conditions), requestOptions: patient)
                await session.close()
                Issue.record("the hello went through a link that disconnects after 8 bytes")
            } catch let error as SpeakerSessionError {
                #expect(error.category == .connection, "\(error)")
            }
        }
    }
}

extension SpeakerAddressTests {
    /// A speaker lost during playback is opened again through the registry, by the address it was opened with (issue
    /// 31 §2): its link conditions and capture apply to the new link as to the first. Before, the player went straight
    /// to TCP at the session's host and port, past the registry (and a speaker opened in process had none: it was not
    /// reconnected at all).
    @Test func aLostSpeakerIsReopenedThroughTheRegistry() async throws {
        try await withTimeLimit {
            let address = try Devices.parseSpeakerAddress("sim:speaker:9")
            let patient = RequestOptions(timeout: .seconds(3600), retransmissions: 0)
            let controller = try await Devices.openSpeakers([address], requestOptions: patient)
            let first = try await controller.session(id: try #require(await controller.devices.first).deviceId)
            let reopen = try #require(await controller.reopen, "the registry's controller reopens through the registry")
            let again = try await reopen(first)
            #expect(again.deviceId == first.deviceId && again !== first)
            #expect(try await again.deviceInfo().deviceId == first.deviceId)
            await again.close()
            // A speaker the registry did not open is refused in one line, not opened somewhere else.
            let stranger = try await Devices.openSpeaker(try Devices.parseSpeakerAddress("sim:speaker:10"), requestOptions: patient)
            await #expect(throws: SpeakerSessionError.self) { _ = try await reopen(stranger) }
            await stranger.close()
            await controller.close()
        }
    }
}
