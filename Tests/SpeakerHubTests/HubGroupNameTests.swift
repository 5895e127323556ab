import OrderedJSON
import Foundation
import Speaker
import SpeakerHub
import SpeakerHubCore
import SpeakerSession
import TestSupport
import Testing

/// A group's name follows one rule wherever it is given (issue 30): the speaker library's `GroupAssignment.name`,
/// 1...255 bytes and not "harman". A group made with a long name (as `tuneup speaker group` allows) can be made and
/// ungrouped through the hub (its page's Ungroup sends Tuneup's `Group.Assign` with no clients).
@Suite("Group names: one rule")
struct HubGroupNameTests {
    @Test func theRuleIsOneBytesRangeAndNotHarman() throws {
        #expect(try GroupAssignment.name(String(repeating: "é", count: 127) + "a").value.utf8.count == 255)
        #expect(throws: SpeakerError.self) { try GroupAssignment.name("") }
        #expect(throws: SpeakerError.self) { try GroupAssignment.name("harman") }
        #expect(throws: SpeakerError.self) { try GroupAssignment.name(String(repeating: "a", count: 256)) }
    }

    @Test func aLongGroupIsMadeAndUngroupedThroughTheHub() async throws {
        try await withHub { hub in
            func rpc(_ params: String) async throws -> OrderedJSON {
                let body = #"{"jsonrpc":"2.0","id":1,"method":"Group.Assign","params":"# + params + "}"
                return try OrderedJSON.parse(Array(try await httpPost(hub.port, "/jsonrpc", body).body.utf8))
            }
            let name = String(repeating: "upstairs ", count: 20)  // 180 bytes: the CLI's limit allows it, the hub's old 64 did not
            let ids = hub.ids.map { "\"\($0)\"" }.joined(separator: ",")
            let made = try await rpc(#"{"name":"\#(name)","clients":[\#(ids)]}"#)
            #expect(made["result"]?["groups"] == .array([.object([("id", .string(String(hub.ids[0]))), ("name", .string(name)),
                                                                  ("clients", .array(hub.ids.map { .string(String($0)) }))])]), "\(made)")
            let ungrouped = try await rpc(#"{"name":"\#(name)","clients":[]}"#)
            #expect(ungrouped["result"]?["groups"] == .array([]), "\(ungrouped)")
            #expect(hub.sim.speakers.allSatisfy { $0.deviceInfo.groupId == 0 })

            for bad in ["harman", "", String(repeating: "a", count: 256)] {
                let refused = try await rpc(#"{"name":"\#(bad)","clients":[]}"#)
                #expect(refused["error"]?["code"] == .int(-32602), "\(bad.prefix(8)): \(refused)")
                guard case let .string(message)? = refused["error"]?["message"] else { throw TestFailure("\(refused)") }
                #expect(message.hasPrefix("params.name: ") && (message.contains("1...255 bytes") || message.contains("means no group")), "\(message)")
            }
        }
    }

    @Test func theControllerRefusesWhatTheRuleRefusesBeforeSending() async throws {
        try await withHub(speakers: 1) { hub in
            await #expect(throws: SpeakerSessionError.self) { try await hub.controller.joinGroup(named: String(repeating: "a", count: 256), ids: hub.ids) }
            await #expect(throws: SpeakerSessionError.self) { try await hub.controller.joinGroup(named: "harman", ids: hub.ids) }
        }
    }
}
