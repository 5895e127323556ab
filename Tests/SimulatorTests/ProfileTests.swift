import LightX
import Testing
import Transport
@testable import HeadsetSimulator
@testable import Simulator

@Suite struct ProfileTests {
    @Test func parsesEveryForm() throws {
        #expect(try BehaviourProfile(parsing: "normal") == .normal)
        #expect(try BehaviourProfile(parsing: "slow") == .slow)
        #expect(try BehaviourProfile(parsing: "flaky") == .flaky(seed: 0))
        #expect(try BehaviourProfile(parsing: "flaky:42") == .flaky(seed: 42))
        #expect(try BehaviourProfile(parsing: "flaky:0x10") == .flaky(seed: 16))
        #expect(try BehaviourProfile(parsing: "silent") == .silent)
        #expect(try BehaviourProfile(parsing: "stops-after:3") == .stopsAnswering(after: 3))
        for p in [BehaviourProfile.normal, .slow, .flaky(seed: 9), .silent, .stopsAnswering(after: 0)] {
            #expect(try BehaviourProfile(parsing: p.description) == p)
        }
    }

    @Test(arguments: ["", "fast", "slow:2", "flaky:", "flaky:x", "stops-after", "stops-after:-1", "stops-after:abc"])
    func rejectsBadForms(text: String) {
        #expect {
            try BehaviourProfile(parsing: text)
        } throws: { error in
            guard let e = error as? SimulatorError else { return false }
            return e.code == .invalidProfile && e.message.contains("'\(text)'") && e.message.contains("stops-after:N")
        }
    }

    func connect(_ profile: BehaviourProfile) async throws -> (SimulatedHeadset, TestHost) {
        let device = try await SimulatedHeadset(statePath: nil, profile: profile)
        let (host, deviceEnd) = InMemoryTransport.pair()
        Task { await device.serve(deviceEnd) }
        return (device, TestHost(host))
    }

    @Test func slowDelaysEveryReply() async throws {
        try await withTimeLimit {
            let (device, host) = try await connect(.slow)
            var h = host
            for _ in 0..<2 {
                let start = ContinuousClock.now
                _ = try await h.request(AppSettings.batteryLevel.readRequest())
                #expect(ContinuousClock.now - start >= BehaviourProfile.slowReplyDelay)
            }
            await device.shutdown()
        }
    }

    @Test func silentNeverReplies() async throws {
        try await withTimeLimit {
            let (device, host) = try await connect(.silent)
            var h = host
            try await h.send(try AppSettings.ancEnabled.writeRequest(true))
            try await h.send(AppSettings.batteryLevel.readRequest())
            await device.press(.anc)
            #expect(try await h.next(timeout: .milliseconds(300)) == nil)
            #expect(await device.answeredRequests == 0)
            #expect(await device.state.ancEnabled == true, "the button still works; the write was never processed")
            await device.shutdown()
        }
    }

    @Test func stopsAnsweringAfterExactlyN() async throws {
        try await withTimeLimit {
            let (device, host) = try await connect(.stopsAnswering(after: 3))
            var h = host
            var answered = 0
            for k in 0..<5 {
                try await h.send(AppSettings.batteryLevel.readRequest())
                // Replies that must come get seconds (a loaded machine is slow); silence needs only a short look.
                if try await h.nextReply(timeout: k < 3 ? .seconds(30) : .milliseconds(300)) != nil { answered += 1 }
            }
            #expect(answered == 3)
            #expect(await device.answeredRequests == 3)
            await device.shutdown()
        }
    }

    @Test func flakyLinkLosesAndCorruptsSomeButNotAllReplies() async throws {
        try await withTimeLimit {
            let (device, host) = try await connect(.flaky(seed: 7))
            var h = host
            let total = 300
            for _ in 0..<total { try await h.send(AppSettings.batteryLevel.readRequest()) }
            // Collect until the link has been quiet for a while. The first reply may take long on a loaded machine
            // (500 ms once ended the count at 0); after that the replies stream in, and a gap of 3 s means done.
            var replies = 0
            var quiet: Duration = .seconds(30)
            while let p = try await h.nextReply(timeout: quiet) {
                if p.command == .appBatteryLevel { replies += 1 }
                quiet = .seconds(3)
            }
            #expect(replies > total / 2, "a light fault rate still lets most replies through (\(replies))")
            #expect(replies < total, "some requests or replies are lost or corrupted")
            await device.shutdown()
        }
    }
}
