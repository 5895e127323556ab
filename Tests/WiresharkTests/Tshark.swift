import Foundation
import Spawn
import TestSupport

/// The repository's tools/wireshark/ folder.
let dissectorsDirectory: String = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("tools/wireshark").path) {
        url.deleteLastPathComponent()
    }
    return url.appendingPathComponent("tools/wireshark").path
}()

let dissectorScripts = ["lightx.lua", "hkwirelesshd.lua", "wearable.lua"]

/// One message a dissector decoded: its protocol and its fields (nested subtrees flattened; repeated fields in order).
struct DissectedMessage: Sendable, CustomStringConvertible {
    var packet: Int
    var protocolName: String
    var fields: [String: [String]]

    var description: String {
        "packet \(packet) \(protocolName): " + fields.keys.sorted().map { "\($0)=\(fields[$0]!.joined(separator: ","))" }.joined(separator: " ")
    }
}

/// What tshark made of a capture.
struct TsharkResult: Sendable {
    var packets = 0
    var messages: [DissectedMessage] = []
    /// Packets with a malformed-packet exception (`_ws.malformed`), a Lua error, or an expert item of error severity.
    var errors: [String] = []
    /// Expert warnings by name (e.g. "lightx.expert.bad_checksum"), counted.
    var warnings: [String: Int] = [:]
    /// Every expert item by name, whatever its severity, counted.
    var experts: [String: Int] = [:]
    var stderr = ""
}

enum Tshark {
    /// tshark on the PATH; nil when it is not installed.
    static var path: String? {
        let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        return (dirs + ["/usr/bin"]).map { $0 + "/tshark" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Where the Debian package puts the dissectors, when they are there (tools/package.sh): Wireshark loads every
    /// plugin of its global folder, so the repository's copies cannot be loaded beside them.
    static var installedPluginDirectory: String? {
        let directory = "/usr/lib/x86_64-linux-gnu/wireshark/plugins/tuneup"
        return FileManager.default.fileExists(atPath: directory + "/lightx.lua") ? directory : nil
    }

    /// The arguments that load the repository's dissectors.
    static var scriptArguments: [String] {
        dissectorScripts.flatMap { ["-X", "lua_script:" + dissectorsDirectory + "/" + $0] }
    }

    /// Runs tshark with `arguments` (and `environment`'s changes) to its end, off the cooperative pool; returns stdout
    /// and stderr.
    static func run(_ arguments: [String], in directory: String,
                    environment: [String: String?] = [:]) async throws -> (status: Int32, output: String, errors: String) {
        guard let tshark = path else {
            throw TestFailure("tshark is not installed: the dissectors are proven with it (apt-get install tshark)")
        }
        if let installed = installedPluginDirectory {
            throw TestFailure("tuneup's dissectors are installed in \(installed) (the Debian package): tshark loads them besides the "
                              + "repository's and refuses both (\"two protocols with the same description\"); these tests need "
                              + "the package removed (apt-get purge tuneup)")
        }
        let out = directory + "/tshark-\(UUID().uuidString).out"
        let err = directory + "/tshark-\(UUID().uuidString).err"
        return try await offThePool {
            let child = try ChildProcess(tshark, arguments, environment: environment, stdout: .file(out), stderr: .file(err))
            let status = child.waitUntilExit() == .exit(0) ? Int32(0) : Int32(1)
            let output = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            let errors = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
            unlink(out)
            unlink(err)
            return (status, output, errors)
        }
    }

    /// Decodes `capture` with the dissectors: `tshark -T json`, every protocol object of `protocols` that holds one
    /// of `keys` is a message. `scripts`: the arguments that load the dissectors (`scriptArguments`; none when they
    /// are installed as plugins, found through `environment`'s HOME).
    static func dissect(_ capture: String, in directory: String, protocols: Set<String> = ["lightx", "hkwhd", "wearable"],
                        extra: [String] = [], scripts: [String] = scriptArguments,
                        environment: [String: String?] = [:]) async throws -> TsharkResult {
        let (status, output, errors) = try await run(["-n"] + scripts + extra + ["-r", capture, "-T", "json", "--no-duplicate-keys"],
                                                     in: directory, environment: environment)
        var result = TsharkResult()
        result.stderr = errors.split(separator: "\n").filter { !$0.contains("Running as user") }.joined(separator: "\n")
        guard status == 0 else { throw TestFailure("tshark failed on \(capture): \(result.stderr)") }
        guard let json = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]] else {
            throw TestFailure("tshark printed no JSON array for \(capture)")
        }
        for entry in json {
            guard let source = entry["_source"] as? [String: Any], let layers = source["layers"] as? [String: Any] else { continue }
            result.packets += 1
            let frame = layers["frame"] as? [String: Any]
            let number = Int((frame?["frame.number"] as? String) ?? "") ?? result.packets
            scanForErrors(layers, packet: number, into: &result)
            // A dissector called by another (USB's control transfers) has its tree inside the caller's.
            var found: [(String, [String: Any])] = []
            collect(layers, protocols: protocols, into: &found)
            for (name, object) in found where isMessage(object, protocolName: name) {
                var fields: [String: [String]] = [:]
                flatten(object, into: &fields)
                result.messages.append(DissectedMessage(packet: number, protocolName: name, fields: fields))
            }
        }
        result.messages.sort { $0.packet < $1.packet }  // stable: the order within a packet stays
        return result
    }

    /// The objects named by one of `protocols`, at any depth (one packet holds one family's messages).
    private static func collect(_ object: [String: Any], protocols: Set<String>, into found: inout [(String, [String: Any])]) {
        for (key, value) in object {
            let objects: [[String: Any]] = (value as? [[String: Any]]) ?? ((value as? [String: Any]).map { [$0] } ?? [])
            if protocols.contains(key) {
                found += objects.map { (key, $0) }
            } else {
                for nested in objects { collect(nested, protocols: protocols, into: &found) }
            }
        }
    }

    private static func isMessage(_ object: [String: Any], protocolName: String) -> Bool {
        switch protocolName {
        case "lightx": object["lightx.command"] != nil
        case "hkwhd": object["hkwhd.type"] != nil || object["hkwhd.audio.stream"] != nil || object["hkwhd.clock.type"] != nil
        case "wearable": object["wearable.opcode"] != nil
        default: false
        }
    }

    private static func flatten(_ object: [String: Any], into fields: inout [String: [String]]) {
        for (key, value) in object where key != "_ws.expert" {
            if let text = value as? String {
                fields[key, default: []].append(text)
            } else if let list = value as? [Any] {
                for item in list {
                    if let text = item as? String { fields[key, default: []].append(text) }
                    else if let nested = item as? [String: Any] { flatten(nested, into: &fields) }
                }
            } else if let nested = value as? [String: Any] {
                flatten(nested, into: &fields)
            }
        }
    }

    /// `_ws.malformed`, `_ws.lua` errors and expert items of error severity anywhere in the packet; warnings counted.
    private static func scanForErrors(_ value: Any, packet: Int, into result: inout TsharkResult) {
        if let object = value as? [String: Any] {
            for (key, inner) in object {
                if key == "_ws.malformed" || key.hasPrefix("_ws.lua.error") {
                    result.errors.append("packet \(packet): \(key) \(inner)")
                }
                if key == "_ws.expert" {
                    let experts: [[String: Any]] = (inner as? [[String: Any]]) ?? ((inner as? [String: Any]).map { [$0] } ?? [])
                    for expert in experts {
                        let severity = Int((expert["_ws.expert.severity"] as? String) ?? "") ?? 0
                        let name = expert.keys.first { !$0.hasPrefix("_ws.") } ?? "?"
                        result.experts[name, default: 0] += 1
                        if severity >= 8_388_608 {
                            result.errors.append("packet \(packet): \(name): \(expert["_ws.expert.message"] ?? "")")
                        } else if severity == 6_291_456 {
                            result.warnings[name, default: 0] += 1
                        }
                    }
                }
                scanForErrors(inner, packet: packet, into: &result)
            }
        } else if let list = value as? [Any] {
            for item in list { scanForErrors(item, packet: packet, into: &result) }
        }
    }
}
