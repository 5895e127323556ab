import Foundation
import LightX
import Spawn
import Testing
import Transport

@Suite(.serialized) struct CLITests {
    @Test func helpTeachesAddressesAndExitCodes() async throws {
        let r = try await CLI.run(["--help"])
        #expect(r.status == 0)
        for word in ["probe", "anc", "ambient", "eq", "battery", "monitor", "sim", "tcp:HOST:PORT", "69"] {
            #expect(r.stdout.contains(word), "help lacks \(word)")
        }
    }

    @Test func probeOnTheBuiltInSimulator() async throws {
        let state = Scratch.directory
        let text = try await CLI.run(["probe"], state: state)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("Tuneup Sim Headset") && text.stdout.contains("Firmware      1.4.2"))
        let r = try await CLI.run(["probe", "--format", "json"], state: state)
        let o = try json(r.stdout)
        #expect(o["device"] as? String == "sim")
        #expect((o["identity"] as? [String: Any])?["product"] as? String == "Tuneup Sim Headset")
        #expect(o["firmwareVersion"] as? String == "1.4.2")
        #expect(o["batteryPercent"] is Int)
        #expect((o["anc"] as? [String: Any])?["enabled"] is Bool)
        let eq = o["eq"] as? [String: Any]
        #expect((eq?["graphic"] as? [String: Any])?["bandCount"] as? Int == 10)
        #expect((eq?["gains"] as? [Int])?.count == 10)
        #expect((o["settings"] as? [String: Any])?["voicePrompt"] is Bool)
    }

    @Test func settingsPersistAcrossInvocationsLikeARealHeadset() async throws {
        let state = Scratch.directory
        #expect(try await CLI.run(["anc", "on"], state: state).status == 0)
        #expect(try await json(CLI.run(["anc", "get", "--format", "json"], state: state).stdout)["enabled"] as? Bool == true)
        #expect(try await CLI.run(["anc", "off"], state: state).status == 0)
        #expect(try await json(CLI.run(["anc", "--format", "json"], state: state).stdout)["enabled"] as? Bool == false)

        #expect(try await CLI.run(["eq", "set", "--preset", "user", "--", "3", "2", "1", "0", "0", "0", "-1", "-2", "-3", "-4"], state: state).status == 0)
        #expect(try await CLI.run(["eq", "preset", "user"], state: state).status == 0)
        let g = try await json(CLI.run(["eq", "get", "--format", "json"], state: state).stdout)
        #expect(g["name"] as? String == "User")
        #expect(g["gains"] as? [Int] == [3, 2, 1, 0, 0, 0, -1, -2, -3, -4])

        #expect(try await CLI.run(["ambient", "set", "--both", "6"], state: state).status == 0)
        let a = try await json(CLI.run(["ambient", "--format", "json"], state: state).stdout)
        #expect(a["left"] as? Int == 6 && a["right"] as? Int == 6 && a["maxStep"] as? Int == 7)
    }

    @Test(arguments: [
        ["ambient", "set", "--left", "99"],
        ["anc", "level", "2"],
        ["eq", "set", "--", "1", "2", "3"],
        ["eq", "set", "--band", "0", "--gain", "40"],
        ["eq", "preset", "jazz"],
        ["probe", "--device", "bogus:thing"],
        ["probe", "--device", "tcp:localhost"],
        ["settings", "set", "voice-prompt", "maybe"],
        ["ambient", "preset", "loud"],
    ])
    func badArgumentsExit64WithOneLine(args: [String]) async throws {
        let r = try await CLI.run(args)
        #expect(r.status == 64, "\(args): \(r.stderr)")
        #expect(r.stderrLines.count == 1 && r.stderr.hasPrefix("tuneup: "), "\(args): \(r.stderr)")
        #expect(!r.stderr.contains("Fatal error") && !r.stderr.contains("Stack dump"))
    }

    @Test func unreachableDeviceExits69() async throws {
        let r = try await CLI.run(["probe", "--device", "tcp:127.0.0.1:1"])
        #expect(r.status == 69)
        #expect(r.stderrLines.count == 1 && r.stderr.contains("connection refused"), "\(r.stderr)")
        let usb = try await CLI.run(["battery", "--device", "usb:1209:0001"])
        #expect(usb.status == 69 && usb.stderrLines.count == 1, "\(usb.stderr)")
        let missing = try await CLI.run(["battery", "--device", "serial:/dev/does-not-exist"])
        #expect(missing.status == 69 && missing.stderrLines.count == 1, "\(missing.stderr)")
    }

    @Test func deviceThatStopsAnsweringExits69() async throws {
        let sim = try await RunningSimulator.start(["--profile", "silent"])
        let r = try await CLI.run(["battery", "--device", sim.addresses[0], "--timeout", "0.2", "--retries", "1"])
        #expect(r.status == 69)
        #expect(r.stderrLines.count == 1 && r.stderr.contains("did not answer"), "\(r.stderr)")
        #expect(await sim.quit() == 0)
    }

    @Test func deviceErrorsExit65() async throws {
        // A device that refuses everything with status Fail.
        let listener = try await TCPListener.bind(host: "127.0.0.1", port: 0)
        let server = Task {
            while let link = try? await listener.accept() {
                Task {
                    var decoder = SPPStreamDecoder()
                    while let chunk = try? await link.receive() {
                        decoder.append(chunk)
                        while let p = decoder.next() {
                            try? await link.send(SPPFraming.encode(try! Packet.reply(to: p, status: .fail)))
                        }
                    }
                }
            }
        }
        let address = listener.boundAddress.description
        let r = try await CLI.run(["anc", "on", "--device", address])
        #expect(r.status == 65, "\(r.stderr)")
        #expect(r.stderrLines.count == 1 && r.stderr.contains("AppANCEnable"), "\(r.stderr)")
        listener.close()
        server.cancel()
    }

    @Test func simulatorServerOverTCPWithPushes() async throws {
        let state = Scratch.directory + "/sim.json"
        let sim = try await RunningSimulator.start(["--listen", "tcp:127.0.0.1:0", "--count", "2", "--state", state], count: 2)
        #expect(sim.addresses.allSatisfy { $0.hasPrefix("tcp:127.0.0.1:") })
        let second = try await json(CLI.run(["probe", "--device", sim.addresses[1], "--format", "json"]).stdout)
        #expect((second["identity"] as? [String: Any])?["serial"] as? String == "TS1-000002")

        // The monitor sees a button press on the device.
        // --duration only bounds a monitor that never sees the push; generous, as the machine may be loaded.
        let monitor = try ChildProcess(CLI.binary.path, ["monitor", "--device", sim.addresses[0], "--count", "1", "--duration", "60", "--format", "json"])
        let lines = monitor.output!
        // The monitor says so on stderr once it is subscribed to pushes.
        #expect(await monitor.errors!.lines(1).first?.contains("monitoring") == true)
        sim.send("press anc")
        let status = try await exitStatus(of: monitor, within: 90)
        #expect(status == 0)
        let output = await lines.text()
        if output.isEmpty { Issue.record("no push; simulator said: \(await sim.errors.lines(1, timeout: 1))") }
        let event = try json(output)
        #expect(event["type"] as? String == "anc")

        sim.send("not a command")
        #expect(await sim.errors.lines(2).last?.contains("bad control line") == true)
        #expect(await sim.quit() == 0)

        // The state file kept device 0's ANC toggle across a restart.
        let again = try await RunningSimulator.start(["--listen", "tcp:127.0.0.1:0", "--state", state])
        let anc = try await json(CLI.run(["anc", "--device", again.addresses[0], "--format", "json"]).stdout)
        #expect(anc["enabled"] as? Bool == (event["enabled"] as? Bool))
        #expect(await again.quit() == 0)
    }

    @Test func simulatorOnAPseudoTerminal() async throws {
        let sim = try await RunningSimulator.start(["--pty"])
        #expect(sim.addresses[0].hasPrefix("serial:/dev/pts/"))
        for _ in 0..<2 {
            let r = try await CLI.run(["battery", "--device", sim.addresses[0], "--format", "json"])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(try json(r.stdout)["percent"] is Int)
        }
        #expect(await sim.quit() == 0)
    }
}
