import Capture
import Foundation
import Spawn
import Testing
import TestSupport

// The captures the tool itself writes (`--capture`, docs/capture.md) of the quickstart's flash, a wearable stream and
// a speaker play, read by tshark with the dissectors and by the project's decoder (`CaptureDecoder`, what `tuneup
// capture show` prints), compared packet by packet.

/// `.build/<config>/tuneup`, next to the test bundle.
private var tuneupBinary: String {
    var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("tuneup").path), dir.path != "/" {
        dir = dir.deletingLastPathComponent()
    }
    return dir.appendingPathComponent("tuneup").path
}

private let repository: String = URL(fileURLWithPath: dissectorsDirectory).deletingLastPathComponent().deletingLastPathComponent().path

/// Runs `tuneup ARGS` to its end off the cooperative pool, with a private state directory; throws unless it exits 0.
private func tuneup(_ args: [String], state: String) async throws {
    let out = state + "/tuneup.out"
    let err = state + "/tuneup.err"
    let (status, errors) = try await offThePool { () throws -> (ChildProcess.Termination, String) in
        let child = try ChildProcess(tuneupBinary, args, environment: ["XDG_STATE_HOME": state, "TUNEUP_DEVICE": nil],
                                     directory: repository, stdout: .file(out), stderr: .file(err))
        let status = child.waitUntilExit(within: 300)
        return (status, (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
    }
    guard status == .exit(0) else {
        throw TestFailure("tuneup \(args.joined(separator: " ")) ended with \(status): \(errors)")
    }
}

/// tshark's messages against CaptureDecoder's for the capture at `path`; returns (packets, messages compared).
private func compareWithCaptureDecoder(_ path: String, in directory: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> (Int, Int) {
    let contents = try await CaptureFile.read(path: path)
    let decoded = projectMessages(CaptureDecoder.decode(contents))
    let result = try await Tshark.dissect(path, in: directory)
    #expect(result.errors.isEmpty, "\(result.errors.prefix(5))", sourceLocation: sourceLocation)
    #expect(result.stderr.isEmpty, "tshark said \(result.stderr)", sourceLocation: sourceLocation)
    #expect(result.packets == contents.packets.count, sourceLocation: sourceLocation)
    #expect(!decoded.isEmpty, sourceLocation: sourceLocation)
    let compared = compare(result.messages, decoded, sourceLocation: sourceLocation)
    return (contents.packets.count, compared)
}

/// CaptureDecoder's messages in the comparison's terms (a message without fields — a report or datagram too short to
/// decode — is one tshark shows as an expert item, not as a message).
func projectMessages(_ messages: [DecodedMessage]) -> [ExpectedMessage] {
    messages.filter { !$0.fields.isEmpty }.map { m in
        var fields: [String: [FieldValue]] = [:]
        for field in m.fields {
            let value: FieldValue = switch field.value {
            case let .uint(v): .uint(v)
            case let .bool(v): .bool(v)
            case let .text(v): .text(v)
            case let .bytes(v): .bytes(v)
            }
            fields[field.name, default: []].append(value)
        }
        return ExpectedMessage(packet: m.packet, protocolName: m.protocolName, fields: fields)
    }
}

@Suite(.serialized) struct WiresharkCLICaptureTests {
    /// The quickstart's flash: `tuneup flash firmware-images/app-1.5.0.img --key firmware-images/dev-public.pem --capture`.
    @Test func quickstartFlash() async throws {
        let state = try TemporaryDirectory.make("tuneup-wireshark-cli")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let path = state + "/flash.pcapng"
        try await tuneup(["flash", "firmware-images/app-1.5.0.img", "--key", "firmware-images/dev-public.pem", "--capture", path], state: state)
        let (packets, messages) = try await compareWithCaptureDecoder(path, in: state)
        print("tuneup flash --capture: \(packets) packets, \(messages) LightX messages compared, tshark = CaptureDecoder")
        #expect(messages > 1000)
    }

    /// `tuneup station run --recipe recipes/sim-headset.yaml --capture` on a blank unit of `tuneup sim headset --blank`:
    /// the station's links to the unit (the application's and the bootloader's after the jump), with every factory
    /// command of the recipe.
    @Test func stationRun() async throws {
        let state = try TemporaryDirectory.make("tuneup-wireshark-cli")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let sim = try await offThePool {
            try ChildProcess(tuneupBinary, ["sim", "headset", "--blank", "--listen", "tcp:127.0.0.1:0"],
                             environment: ["XDG_STATE_HOME": state, "TUNEUP_DEVICE": nil], stdin: .pipe)
        }
        let address = await sim.output!.lines(1, timeout: 60).first ?? ""
        let path = state + "/station.pcapng"
        do {
            #expect(address.hasPrefix("tcp:"), "tuneup sim headset --blank printed \(address)")
            try await tuneup(["station", "run", "--recipe", "recipes/sim-headset.yaml", "-d", address, "--db", state + "/records.sqlite",
                              "--station", "wireshark-test", "--capture", path], state: state)
        } catch {
            sim.terminate()
            _ = await sim.exited(within: 30)
            throw error
        }
        sim.terminate()
        _ = await sim.exited(within: 30)
        let (packets, messages) = try await compareWithCaptureDecoder(path, in: state)
        print("tuneup station run --capture: \(packets) packets, \(messages) LightX messages compared, tshark = CaptureDecoder")
        #expect(messages > 20)
    }

    /// `tuneup wearable stream --device sim:wearable --capture` for a second.
    @Test func wearableStream() async throws {
        let state = try TemporaryDirectory.make("tuneup-wireshark-cli")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let path = state + "/wearable.pcapng"
        try await tuneup(["wearable", "stream", "--device", "sim:wearable", "--duration", "1", "--capture", path], state: state)
        let (packets, messages) = try await compareWithCaptureDecoder(path, in: state)
        print("tuneup wearable stream --capture: \(packets) packets, \(messages) wearable messages compared, tshark = CaptureDecoder")
        #expect(messages > 10)
    }

    /// `tuneup speaker play song.wav --speaker sim:speaker --capture`: the control link and whatever datagrams the
    /// capture holds.
    @Test func speakerPlay() async throws {
        let state = try TemporaryDirectory.make("tuneup-wireshark-cli")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let song = state + "/song.wav"
        let samples = (0..<(48_000 / 2 * 2)).map { Int16(truncatingIfNeeded: $0 &* 37) }
        try await offThePool { try SoundFiles.write(song, format: 0x01_0002, rate: 48_000, channels: 2, samples: samples) }
        let path = state + "/speaker.pcapng"
        try await tuneup(["speaker", "play", song, "--speaker", "sim:speaker", "--capture", path], state: state)
        let (packets, messages) = try await compareWithCaptureDecoder(path, in: state)
        print("tuneup speaker play --capture: \(packets) packets, \(messages) HKWirelessHD messages compared, tshark = CaptureDecoder")
        #expect(messages > 10)
    }
}
