import Foundation
import Testing

/// `tuneup sim speaker ...` running (stdin open for control lines).
enum RunningSpeakers {
    /// `namespace`: run it in that network namespace (`ip netns exec`).
    static func start(_ args: [String], count: Int, discoveryPort: UInt16 = 0, namespace: String? = nil) async throws -> RunningSimulator {
        try await RunningSimulator.start(["--count", String(count), "--discovery-port", String(discoveryPort)] + args, count: count,
                                         kind: "speaker", namespace: namespace)
    }
}

extension RunningSimulator {
    /// `--speaker ADDRESS` for each speaker.
    var speakerArgs: [String] { addresses.flatMap { ["--speaker", $0] } }
}

@Suite("tuneup speaker and sim speaker", .serialized)
struct SpeakerCLITests {
    @Test func simPrintsOneAddressPerSpeakerAndStopsOnSignal() async throws {
        let sim = try await RunningSpeakers.start([], count: 3)
        #expect(sim.addresses.count == 3)
        for address in sim.addresses {
            #expect(address.wholeMatch(of: /127\.0\.0\.1:\d+/) != nil, "\(address)")
        }
        #expect(await sim.stop() == 0)
    }

    @Test func listInfoVolumeMuteRenameAndGroupAsJSON() async throws {
        let sim = try await RunningSpeakers.start([], count: 2)
        let list = try await CLI.run(["speaker", "list", "--format", "json"] + sim.speakerArgs)
        #expect(list.status == 0, "\(list.stderr)")
        let speakers = try #require(try json(list.stdout)["speakers"] as? [[String: Any]])
        #expect(speakers.count == 2)
        for key in ["deviceId", "deviceName", "groupId", "groupName", "modelName", "ipAddress", "port", "macAddress", "volume", "active",
                    "wifiSignalStrength", "role", "version", "balance", "isPlaying", "channelType", "isMaster"] {
            #expect(speakers[0][key] != nil, "missing \(key)")
        }

        let volume = try await CLI.run(["speaker", "volume", "40", "--index", "1", "--format", "json"] + sim.speakerArgs)
        #expect(volume.status == 0, "\(volume.stderr)")
        #expect(try json(volume.stdout)["volume"] as? Int == 40)
        let all = try await CLI.run(["speaker", "volume", "--format", "json"] + sim.speakerArgs)
        #expect(try json(all.stdout)["averageVolume"] as? Double == 32.5)

        let mute = try await CLI.run(["speaker", "mute", "--index", "1"] + sim.speakerArgs)
        #expect(mute.status == 0 && mute.stdout.contains("muted (volume 40)"), "\(mute.stdout) \(mute.stderr)")
        let unmute = try await CLI.run(["speaker", "unmute", "--index", "1", "--format", "json"] + sim.speakerArgs)
        #expect(unmute.stdout.contains("\"muted\" : false") && unmute.stdout.contains("\"volume\" : 40"), "\(unmute.stdout)")

        let rename = try await CLI.run(["speaker", "rename", "Den", "--index", "0"] + sim.speakerArgs)
        #expect(rename.status == 0 && rename.stdout.contains("renamed Den"), "\(rename.stdout) \(rename.stderr)")

        let group = try await CLI.run(["speaker", "group", "Kitchen", "--index", "1", "--index", "0", "--format", "json"] + sim.speakerArgs)
        #expect(group.status == 0, "\(group.stderr)")
        let second = speakers[1]["deviceId"] as? UInt64
        #expect(group.stdout.contains("\"groupId\" : \(second ?? 0)"), "\(group.stdout)")
        let member = try await CLI.run(["speaker", "info", "--group", "Kitchen", "--member", "0", "--format", "json"] + sim.speakerArgs)
        let info = try json(member.stdout)
        #expect(info["deviceName"] as? String == "Den" && info["groupName"] as? String == "Kitchen")
        #expect(await sim.stop() == 0)
    }

    @Test func badInputAndUnreachableSpeakersAreOneLineWithTheirExitCodes() async throws {
        let sim = try await RunningSpeakers.start([], count: 1)
        let loud = try await CLI.run(["speaker", "volume", "51"] + sim.speakerArgs)
        #expect(loud.status == 64 && loud.stderrLines.count == 1, "\(loud.stderr)")
        let unknown = try await CLI.run(["speaker", "info", "--index", "3"] + sim.speakerArgs)
        #expect(unknown.status == 64 && unknown.stderrLines == ["tuneup: there is no speaker 3; speakers are 0...0"], "\(unknown.stderr)")
        let badAddress = try await CLI.run(["speaker", "list", "--speaker", "nowhere"])
        #expect(badAddress.status == 64 && badAddress.stderrLines.count == 1, "\(badAddress.stderr)")
        #expect(await sim.stop() == 0)
        let gone = try await CLI.run(["speaker", "list"] + sim.speakerArgs)
        #expect(gone.status == 69 && gone.stderrLines.count == 1 && gone.stderr.contains("cannot reach speaker"), "\(gone.stderr)")
        let nobody = try await CLI.run(["speaker", "list", "--discovery-target", "127.0.0.1:9", "--window", "0.2"])
        #expect(nobody.status == 69 && nobody.stderr.contains("no speakers answered discovery"), "\(nobody.stderr)")
    }

    @Test func listFindsSimulatedSpeakersByDiscovery() async throws {
        // A port of this test's own (not 45454, which other runs may use), queried on the loopback broadcast as the
        // standard targets do.
        // Speakers listening on every interface (they know no address of their own: 0.0.0.0) are listed at the address
        // their answer came from (issue 19), and that address reaches them.
        let port = UInt16.random(in: 47000...48999)
        let sim = try await RunningSpeakers.start(["--listen", "tcp:0.0.0.0:0"], count: 2, discoveryPort: port)
        let list = try await CLI.run(["speaker", "list", "--discovery-target", "127.255.255.255:\(port)", "--window", "0.5", "--format", "json"])
        #expect(list.status == 0, "\(list.stderr)")
        let speakers = try json(list.stdout)["speakers"] as? [[String: Any]] ?? []
        let found = Set(speakers.compactMap { s in (s["ipAddress"] as? String).flatMap { ip in (s["port"] as? Int).map { "\(ip):\($0)" } } })
        let expected = Set(sim.addresses.compactMap { $0.split(separator: ":").last.map { "127.0.0.1:\($0)" } })
        #expect(expected.count == 2 && found == expected, "\(list.stdout)")
        let text = try await CLI.run(["speaker", "list", "--discovery-target", "127.255.255.255:\(port)", "--window", "0.5"])
        #expect(expected.allSatisfy { text.stdout.contains("  \($0)  ") } && !text.stdout.contains("0.0.0.0"), "\(text.stdout)")
        let named = try await CLI.run(["speaker", "list"] + found.sorted().flatMap { ["--speaker", $0] })
        #expect(named.status == 0, "\(named.stderr)")
        #expect(await sim.stop() == 0)
    }

    @Test func settingsPersistAcrossSimulatorRestarts() async throws {
        let state = Scratch.directory + "/speakers.json"
        let first = try await RunningSpeakers.start(["--state", state], count: 1)
        let set = try await CLI.run(["speaker", "volume", "7", "--index", "0"] + first.speakerArgs)
        #expect(set.status == 0, "\(set.stderr)")
        #expect(await first.stop() == 0)
        let second = try await RunningSpeakers.start(["--state", state], count: 1)
        let info = try await CLI.run(["speaker", "info", "--format", "json"] + second.speakerArgs)
        #expect(try json(info.stdout)["volume"] as? Int == 7, "\(info.stdout) \(info.stderr)")
        #expect(await second.stop() == 0)
    }
}
