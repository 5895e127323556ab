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
        guard case let .array(items) = try HubJSON.parse(Array(answer.utf8)) else { throw TestFailure(answer) }
        #expect(items.count == HubAPI.rpcMaxBatch)
        #expect(items.enumerated().allSatisfy { $1["id"] == .int($0) && $1["result"]?["major"] == .int(2) }, "\(answer.prefix(300))")
        #expect(try await hub.error(batch(HubAPI.rpcMaxBatch + 1)).code == -32600)
    }
}
