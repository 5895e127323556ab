import Foundation
import Testing

/// `tuneup speaker events`: another command's changes show as events, with the average volume; a speaker that goes
/// away is reported, and when the last named one is gone the command ends with exit 69. With discovery, speakers
/// that appear are followed and those that vanish are reported.
@Suite("tuneup speaker events", .serialized)
struct SpeakerEventsTests {
    /// The JSON events printed so far.
    static func events(_ out: Collector) -> [[String: Any]] {
        out.linesBlocking(0, timeout: 0).compactMap { try? json($0) }
    }

    /// Waits (off the cooperative pool, up to 30 s) until an event matches; returns it.
    static func waitFor(_ out: Collector, _ what: String, _ match: @escaping @Sendable ([String: Any]) -> Bool) async throws -> [String: Any] {
        let found = try await offThePool { () -> String? in
            let deadline = Date().addingTimeInterval(30)
            repeat {
                if let line = out.linesBlocking(0, timeout: 0).first(where: { (try? json($0)).map(match) == true }) { return line }
                usleep(10_000)
            } while Date() < deadline
            return nil
        }
        guard let found else { throw CLIError("no \(what) event in: \(out.linesBlocking(0, timeout: 0).joined(separator: "\n"))") }
        return try json(found)
    }

    @Test func namedSpeakersReportChangesAndTheirEnd() async throws {
        let sim = try await RunningSpeakers.start([], count: 2)
        let list = try json(try await CLI.run(["speaker", "list", "--format", "json"] + sim.speakerArgs).stdout)
        let ids = (list["speakers"] as? [[String: Any]] ?? []).compactMap { $0["deviceId"] as? UInt64 }
        try #require(ids.count == 2)
        let volumes = (list["speakers"] as? [[String: Any]] ?? []).compactMap { $0["volume"] as? Int }
        let state = Scratch.directory
        let p = try ExampleTests.start(["speaker", "events", "--format", "json"] + sim.speakerArgs, state: state, directory: nil)
        defer { if p.process.isRunning { p.process.terminate() } }
        // It says it follows them once every session is open.
        let ready = try await offThePool { () -> Bool in
            let deadline = Date().addingTimeInterval(30)
            while !p.err.linesBlocking(0, timeout: 0).contains(where: { $0.contains("following 2 speakers") }), Date() < deadline { usleep(10_000) }
            return Date() < deadline
        }
        try #require(ready, "\(p.err.linesBlocking(0, timeout: 0))")

        let set = try await CLI.run(["speaker", "volume", "20", "--index", "0"] + sim.speakerArgs)
        #expect(set.status == 0, "\(set.stderr)")
        let changed = try await Self.waitFor(p.out, "volume-changed") { $0["event"] as? String == "volume-changed" }
        #expect(changed["deviceId"] as? UInt64 == ids[0] && changed["volume"] as? Int == 20 && changed["muted"] as? Bool == false, "\(changed)")
        let average = try await Self.waitFor(p.out, "average-volume") { $0["event"] as? String == "average-volume" }
        #expect(average["averageVolume"] as? Double == Double(20 + volumes[1]) / 2, "\(average)")

        let rename = try await CLI.run(["speaker", "rename", "Porch", "--index", "1"] + sim.speakerArgs)
        #expect(rename.status == 0, "\(rename.stderr)")
        let renamed = try await Self.waitFor(p.out, "name-changed") { $0["reason"] as? String == "name-changed" }
        #expect(renamed["event"] as? String == "device-state-updated" && renamed["deviceId"] as? UInt64 == ids[1], "\(renamed)")
        #expect(renamed["time"] is String)

        sim.send("off 1")
        let removed = try await Self.waitFor(p.out, "speaker-removed") { $0["event"] as? String == "speaker-removed" }
        #expect(removed["deviceId"] as? UInt64 == ids[1] && removed["reason"] as? String == "its connection ended", "\(removed)")
        #expect(p.process.isRunning, "one speaker is still followed")
        sim.send("off 0")
        let status = try await exitStatus(of: p.process)
        let errors = await p.err.text()
        #expect(status == 69, "\(errors)")
        #expect(errors.contains("tuneup: every speaker followed went away"))
        #expect(await sim.quit() == 0)
    }

    @Test func discoveryFollowsSpeakersThatAppearAndVanish() async throws {
        let port = UInt16.random(in: 47000...48999)
        let sim = try await RunningSpeakers.start([], count: 2, discoveryPort: port)
        let p = try ExampleTests.start(["speaker", "events", "--discovery-target", "127.255.255.255:\(port)", "--window", "0.2",
                                        "--interval", "0.5", "--format", "json"], state: Scratch.directory, directory: nil)
        defer { if p.process.isRunning { p.process.terminate() } }
        let added = try await offThePool { () -> [String] in
            let deadline = Date().addingTimeInterval(30)
            while Self.events(p.out).filter({ $0["event"] as? String == "speaker-added" }).count < 2, Date() < deadline { usleep(10_000) }
            return Self.events(p.out).filter { $0["event"] as? String == "speaker-added" }.compactMap { $0["address"] as? String }
        }
        #expect(Set(added) == Set(sim.addresses), "\(p.out.linesBlocking(0, timeout: 0))")

        sim.send("off 0")
        let removed = try await Self.waitFor(p.out, "speaker-removed") { $0["event"] as? String == "speaker-removed" }
        #expect(removed["address"] as? String == sim.addresses[0], "\(removed)")
        sim.send("on 0")
        let back = try await offThePool { () -> Int in
            let deadline = Date().addingTimeInterval(30)
            while Self.events(p.out).filter({ $0["event"] as? String == "speaker-added" }).count < 3, Date() < deadline { usleep(10_000) }
            return Self.events(p.out).filter { $0["event"] as? String == "speaker-added" }.count
        }
        #expect(back == 3, "the speaker that came back is followed again: \(p.out.linesBlocking(0, timeout: 0))")
        #expect(p.process.isRunning)
        p.process.interrupt()
        let status = try await exitStatus(of: p.process)
        #expect(status == 130)
        #expect(await sim.quit() == 0)
    }

    @Test func badArgumentsAreOneLine() async throws {
        for args in [["--count", "0"], ["--duration", "-1"], ["--interval", "0"], ["--speaker", "nowhere"]] {
            let r = try await CLI.run(["speaker", "events"] + args)
            #expect(r.status == 64 && r.stderrLines.count == 1, "\(args): \(r.status) \(r.stderr)")
        }
        let gone = try await CLI.run(["speaker", "events", "--speaker", "127.0.0.1:9"])
        #expect(gone.status == 69 && gone.stderrLines.count == 1, "\(gone.stderr)")
    }
}
