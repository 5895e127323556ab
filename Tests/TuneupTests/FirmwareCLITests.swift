import Foundation
import LightX
import Testing

/// The repository's firmware-images/ folder.
let images: String = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("firmware-images").path) {
        url.deleteLastPathComponent()
    }
    return url.appendingPathComponent("firmware-images").path
}()

/// JSON Lines output into objects.
func jsonLines(_ text: String) throws -> [[String: Any]] {
    try text.split(separator: "\n").map { try json(String($0)) }
}

@Suite(.serialized) struct FirmwareCLITests {
    @Test func flashOverTCPWithJSONProgressThenProbe() async throws {
        let sim = try await RunningSimulator.start(["--time-scale", "0"])
        let device = sim.addresses[0]
        let progressFile = Scratch.directory + "/progress.jsonl"
        let r = try await CLI.run(["flash", images + "/app-1.5.0.img", "--device", device, "--key", images + "/dev-public.pem",
                             "--format", "json", "--progress-file", progressFile])
        #expect(r.status == 0, "\(r.stderr)")
        let events = try jsonLines(r.stdout)
        let progress = events.filter { $0["type"] as? String == "progress" }
        let fractions = progress.compactMap { $0["fraction"] as? Double }
        #expect(fractions.count > 5 && zip(fractions, fractions.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(Set(progress.compactMap { $0["phase"] as? String }).isSuperset(of: ["connect", "authenticate", "enter-bootloader", "write", "verify", "commit", "reboot", "confirm", "done"]))
        let result = try #require(events.last)
        #expect(result["type"] as? String == "result" && result["newVersion"] as? String == "1.5.0")
        #expect(try jsonLines(String(contentsOfFile: progressFile, encoding: .utf8)).count == progress.count)

        let probe = try await json(CLI.run(["probe", "--device", device, "--format", "json"]).stdout)
        #expect(probe["firmwareVersion"] as? String == "1.5.0")
        #expect((probe["identity"] as? [String: Any])?["product"] as? String == "Tuneup Sim Headset Pro")
        #expect(await sim.quit() == 0)
    }

    @Test(arguments: [
        (["broken-other-model.img"], "model"),
        (["app-1.3.0.img"], "older"),
        (["broken-bad-signature.img", "--key", "dev-public.pem"], "signature"),
        (["broken-unsigned.img", "--key", "dev-public.pem"], "not signed"),
        (["broken-truncated.img"], "bytes"),
        (["broken-too-large.img"], "do not fit"),
        (["raw-app-1.5.0-no-region.bin"], "--region"),
    ])
    func refusalsExit65WithOneLine(args: [String], says: String) async throws {
        let sim = try await RunningSimulator.start(["--time-scale", "0"])
        let full = args.map { $0.hasSuffix(".img") || $0.hasSuffix(".pem") || $0.hasSuffix(".bin") ? images + "/" + $0 : $0 }
        let r = try await CLI.run(["flash"] + full + ["--device", sim.addresses[0]])
        #expect(r.status == 65, "\(args): \(r.stderr)")
        #expect(r.stderrLines.filter { $0.hasPrefix("tuneup:") }.count == 1 && r.stderr.contains(says), "\(r.stderr)")
        let status = try await json(CLI.run(["bootloader", "status", "--device", sim.addresses[0], "--format", "json"]).stdout)
        #expect(status["mode"] as? String == "application" && status["applicationVersion"] as? String == "1.4.2", "untouched")
        #expect(await sim.quit() == 0)
    }

    @Test func bootloaderEnterReadBackLeave() async throws {
        let sim = try await RunningSimulator.start(["--time-scale", "0"])
        let device = sim.addresses[0]
        let entered = try await CLI.run(["bootloader", "enter", "--device", device, "--format", "json"])
        #expect(entered.status == 0, "\(entered.stderr)")
        let status = try json(entered.stdout)
        #expect(status["mode"] as? String == "bootloader" && status["queueDepth"] as? Int == 32)
        #expect(status["bootloaderVersion"] as? String == "1.0.0" && status["applicationVersion"] as? String == "1.4.2")

        let out = Scratch.directory + "/readback.img"
        let read = try await CLI.run(["firmware", "read", "--region", "app", "-o", out, "--device", device])
        #expect(read.status == 0, "\(read.stderr)")
        let factory = try Data(contentsOf: URL(fileURLWithPath: images + "/app-1.4.2.img"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == factory, "the read-back is the factory image")

        let left = try await json(CLI.run(["bootloader", "leave", "--device", device, "--format", "json"]).stdout)
        #expect(left["mode"] as? String == "application")
        #expect(await sim.quit() == 0)
    }

    @Test func imageCommands() async throws {
        let dir = Scratch.directory
        #expect(try await CLI.run(["image", "keygen", "-o", dir + "/k.pem", "--public-out", dir + "/k.pub.pem"]).status == 0)
        let payload = dir + "/payload.bin"
        #expect(try await CLI.run(["image", "build-sim-app", "--manifest", images + "/manifests/app-1.5.0.json", "--size", "8192", "-o", payload]).status == 0)
        let signed = dir + "/signed.img"
        let sign = try await CLI.run(["image", "sign", payload, "-o", signed, "--key", dir + "/k.pem", "--version", "1.5.0"])
        #expect(sign.status == 0, "\(sign.stderr)")
        #expect(try await CLI.run(["image", "verify", signed, "--key", dir + "/k.pub.pem"]).status == 0)
        let wrong = try await CLI.run(["image", "verify", signed, "--key", images + "/dev-public.pem"])
        #expect(wrong.status == 65 && wrong.stderrLines.count == 1, "\(wrong.stderr)")
        let inspect = try await json(CLI.run(["image", "inspect", signed, "--format", "json"]).stdout)
        #expect(inspect["format"] as? String == "mcuboot")
        let missing = try await CLI.run(["image", "inspect", dir + "/nope.img"])
        #expect(missing.status == 74 && missing.stderrLines.count == 1, "\(missing.stderr)")
    }
}
