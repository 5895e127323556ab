import OrderedJSON
import SpeakerHubCore
import TestSupport
import Testing

extension HubRPCTests {
    /// issue 31 §5: the batch limit is inclusive: 64 requests are answered, each of them; 65 are refused.
    @Test func aBatchOfExactlyTheLimitIsAnswered() async throws {
        let hub = Hub()
        func batch(_ n: Int) -> String {
            "[" + (0..<n).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"Server.GetRPCVersion"}"# }.joined(separator: ",") + "]"
        }
        let answer = try #require(await hub.send(batch(HubAPI.rpcMaxBatch)))
        guard case let .array(items) = try OrderedJSON.parse(Array(answer.utf8)) else { throw TestFailure(answer) }
        #expect(items.count == HubAPI.rpcMaxBatch)
        #expect(items.enumerated().allSatisfy { $1["id"] == .int($0) && $1["result"]?["major"] == .int(2) }, "\(answer.prefix(300))")
        #expect(try await hub.error(batch(HubAPI.rpcMaxBatch + 1)).code == -32600)
    }
}

extension HubRPCTests {
    /// issue 31 §5 (planted: the size limit made exclusive): a message of exactly `rpcMaxMessage` bytes is read and
    /// answered; one byte more is refused.
    @Test func aMessageOfExactlyTheLimitIsAnswered() async throws {
        let request = #"{"jsonrpc":"2.0","id":7,"method":"Server.GetRPCVersion"}"#
        let exact = request + String(repeating: " ", count: HubAPI.rpcMaxMessage - request.utf8.count)
        #expect(exact.utf8.count == HubAPI.rpcMaxMessage)
        let answer = try #require(await hub(exact))
        guard case .object = try OrderedJSON.parse(Array(answer.utf8)) else { throw TestFailure(answer) }
        let parsed = try OrderedJSON.parse(Array(answer.utf8))
        #expect(parsed["id"] == .int(7) && parsed["result"]?["major"] == .int(2), "\(answer)")
        #expect(try await Hub().error(exact + " ").code == -32600)
    }

    private func hub(_ text: String) async -> String? { await Hub().send(text) }
}

extension HubRPCTests {
    /// issue 31 §5 (planted: a null id refused): `"id": null` is a request (JSON-RPC 2.0 allows it), answered with a
    /// null id; a missing id is a notification, answered with nothing.
    @Test func aNullIdIsARequestAndIsAnswered() async throws {
        let answer = try #require(await hub(#"{"jsonrpc":"2.0","id":null,"method":"Server.GetRPCVersion"}"#))
        let parsed = try OrderedJSON.parse(Array(answer.utf8))
        #expect(parsed["id"] == .null && parsed["result"]?["major"] == .int(2) && parsed["error"] == nil, "\(answer)")
        #expect(await hub(#"{"jsonrpc":"2.0","method":"Server.GetRPCVersion"}"#) == nil)
    }
}
