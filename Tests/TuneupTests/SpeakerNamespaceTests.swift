import Foundation
import Testing

/// Discovery across hosts: speakers in network namespaces of their own and the controller in another, joined by a
/// bridge like the hosts of one Wi-Fi network, found with no address given (issue 10 §2). Needs root (`ip netns`):
/// it fails, not skips, without it.
@Suite("speaker discovery across network namespaces", .serialized)
struct SpeakerNamespaceTests {
    /// Three hosts (two with speakers, one controller) on a bridge in a fourth namespace, 10.231.77.0/24.
    final class TestNetwork: @unchecked Sendable {
        let prefix = "tu\(getpid() % 100000)"
        let hosts = ["spk1", "spk2", "ctl"]
        var bridge: String { "\(prefix)-br" }
        func namespace(_ host: String) -> String { "\(prefix)-\(host)" }
        func address(_ host: String) -> String { "10.231.77.\(hosts.firstIndex(of: host)! + 10)" }

        func up() throws {
            try ip("netns", "add", bridge)
            try ip("-n", bridge, "link", "add", "br0", "type", "bridge")
            try ip("-n", bridge, "link", "set", "br0", "up")
            for (k, host) in hosts.enumerated() {
                let ns = namespace(host)
                try ip("netns", "add", ns)
                try ip("-n", ns, "link", "set", "lo", "up")
                // A veth pair: eth0 in the host, its peer on the bridge.
                try ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "port\(k)", "netns", bridge)
                try ip("-n", bridge, "link", "set", "port\(k)", "master", "br0", "up")
                try ip("-n", ns, "addr", "add", "\(address(host))/24", "broadcast", "10.231.77.255", "dev", "eth0")
                try ip("-n", ns, "link", "set", "eth0", "up")
                // A LAN host has a default route; broadcast and multicast queries leave by it.
                try ip("-n", ns, "route", "add", "default", "dev", "eth0")
            }
        }

        func down() {
            for ns in hosts.map(namespace) + [bridge] { try? ip("netns", "del", ns) }
        }

        func ip(_ args: String...) throws {
            let result = try CLI.runProcess(URL(fileURLWithPath: "/usr/sbin/ip"), args, environment: [:], timeout: 20,
                                            name: "ip \(args.joined(separator: " "))")
            guard result.status == 0 else {
                throw CLIError("ip \(args.joined(separator: " ")) failed (\(result.status)): \(result.stderr) (this test needs root)")
            }
        }
    }

    @Test func speakersInOtherNamespacesAreFoundWithNoAddressGiven() async throws {
        let net = TestNetwork()
        defer { net.down() }
        try await offThePool { try net.up() }
        let first = try await RunningSpeakers.start(["--listen", "tcp:0.0.0.0:0", "--seed", "11"], count: 2, discoveryPort: 45454,
                                                    namespace: net.namespace("spk1"))
        let second = try await RunningSpeakers.start(["--listen", "tcp:0.0.0.0:0", "--seed", "12"], count: 1, discoveryPort: 45454,
                                                     namespace: net.namespace("spk2"))
        defer { Task { _ = await first.stop(); _ = await second.stop() } }

        let result = try await offThePool {
            try CLI.runProcess(URL(fileURLWithPath: "/usr/sbin/ip"),
                               ["netns", "exec", net.namespace("ctl"), CLI.binary.path, "speaker", "list", "--format", "json"],
                               environment: ["XDG_STATE_HOME": Scratch.directory], timeout: 30, name: "tuneup speaker list")
        }
        #expect(result.status == 0, "\(result.stderr)")
        let list = try json(result.stdout)
        let speakers = try #require(list["speakers"] as? [[String: Any]], "\(result.stdout)")
        #expect(speakers.count == 3, "\(result.stdout)")
        // Every speaker was reached at its own host's address, through the bridge.
        let ports = Set(speakers.compactMap { $0["port"] as? Int })
        #expect(ports.count == 3)
        let ids = Set(speakers.compactMap { $0["deviceId"] as? UInt64 ?? ($0["deviceId"] as? Int).map(UInt64.init) })
        #expect(ids.count == 3)
        // Each is listed at the address its answer came from (it listens on 0.0.0.0 and knows no other), not 0.0.0.0.
        let addresses = speakers.compactMap { $0["ipAddress"] as? String }
        #expect(addresses.sorted() == [net.address("spk1"), net.address("spk1"), net.address("spk2")], "\(result.stdout)")
        #expect(await first.stop() == 0)
        #expect(await second.stop() == 0)
    }

    @Test func aControllerAloneOnItsNetworkSaysNoSpeakerAnswered() async throws {
        let net = TestNetwork()
        defer { net.down() }
        try await offThePool { try net.up() }
        let result = try await offThePool {
            try CLI.runProcess(URL(fileURLWithPath: "/usr/sbin/ip"),
                               ["netns", "exec", net.namespace("ctl"), CLI.binary.path, "speaker", "list", "--window", "0.5"],
                               environment: ["XDG_STATE_HOME": Scratch.directory], timeout: 30, name: "tuneup speaker list")
        }
        #expect(result.status != 0)
        #expect(result.stderr.hasPrefix("tuneup: no speakers answered discovery"), "\(result.stderr)")
    }
}
