import Foundation
import Spawn
import Testing
import TestSupport

/// `station run --ui` and `line serve`: addresses that are not HOST:PORT exit 64, addresses that cannot be bound
/// and a database that cannot be reached exit 69, each with one line.
@Suite struct PageCLITests {
    static let recipe: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path + "/recipes/sim-headset.yaml"
    }()

    /// A listening TCP socket on loopback (held until `close`), and its port.
    static func heldPort() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard fd >= 0, bound else { throw CLIError("cannot hold a loopback port") }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test func stationUIAddressThatIsNotHostPortExits64() async throws {
        let scratch = Scratch.directory
        for bad in ["nohost", "127.0.0.1:70000", ":8080", "::1:80"] {
            let r = try await CLI.run(["station", "run", "--recipe", Self.recipe, "-d", "tcp:127.0.0.1:1", "--db", scratch + "/r.sqlite", "--ui", bad])
            #expect(r.status == 64, "\(bad): \(r.stderr)")
            #expect(r.stderrLines.count == 1 && r.stderr.contains("--ui"), "\(bad): \(r.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: scratch + "/r.sqlite"), "nothing opened before the arguments were checked")
    }

    @Test func stationUIAddressInUseExits69BeforeAnyUnit() async throws {
        let scratch = Scratch.directory
        let held = try Self.heldPort()
        defer { close(held.fd) }
        let r = try await CLI.run(["station", "run", "--recipe", Self.recipe, "-d", "tcp:127.0.0.1:1", "--db", scratch + "/r.sqlite",
                                   "--ui", "127.0.0.1:\(held.port)", "--format", "json"])
        #expect(r.status == 69, "\(r.stderr)")
        #expect(r.stderrLines == ["tuneup: cannot serve the page on 127.0.0.1:\(held.port): address already in use"], "\(r.stderrLines)")
        #expect(!r.stdout.contains("\"arrived\""), "no unit was touched")
    }

    /// A watching station with --ui: the page's state shows the unit pass, with the operator; Ctrl-C ends both.
    @Test func aWatchingStationServesItsPageUntilCtrlC() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--count", "1", "--time-scale", "0", "--listen", "tcp:127.0.0.1:0"], count: 1)
        let (_, recipe) = try StationCLITests.recipe()
        let station = try await offThePool {
            try ChildProcess(CLI.binary.path, ["station", "run", "--recipe", recipe, "-d", sim.addresses[0], "--watch", "--ui", "127.0.0.1:0",
                                               "--station", "page-cli", "--operator", "ann", "--format", "json"])
        }
        let first = await station.errors!.lines(1, timeout: 60).first ?? ""
        #expect(first.hasPrefix("tuneup: operator page at http://127.0.0.1:"), "\(first)")
        let port = Int(first.split(separator: ":").last?.filter(\.isNumber) ?? "") ?? 0
        var state = ""
        try await waitUntil("the unit passed on the page", within: 90) {
            state = (try? await Self.get(port: port, path: "/state")) ?? ""
            return state.contains("\"state\":\"pass\"")
        }
        #expect(state.contains("\"operator\":\"ann\"") && state.contains("\"station\":\"page-cli\""), "\(state.prefix(400))")
        let page = try await Self.get(port: port, path: "/")
        #expect(page.hasPrefix("<!DOCTYPE html>") && page.contains("<title>Station page-cli</title>"))
        station.interrupt()
        #expect(try await exitStatus(of: station, within: 30) == 130)
        #expect((try? await Self.get(port: port, path: "/state")) == nil, "the page stopped with the station")
        _ = await sim.quit()
    }

    /// GET on loopback: the body of a 200, else an error.
    static func get(port: Int, path: String) async throws -> String {
        let (status, body) = try await IdleClient.get(port: port, path: path)
        guard status == 200 else { throw CLIError("GET \(path): status \(status) \(body.prefix(80))") }
        return body
    }

    @Test func lineServeRefusesBadArgumentsAndAnUnreachableDatabase() async throws {
        let notURL = try await CLI.run(["line", "serve", "--db", "line.sqlite"])
        #expect(notURL.status == 64 && notURL.stderrLines.count == 1, "\(notURL.stderr)")
        let badListen = try await CLI.run(["line", "serve", "--db", "postgres://line@127.0.0.1/line", "--listen", "127.0.0.1"])
        #expect(badListen.status == 64 && badListen.stderr.contains("--listen"), "\(badListen.stderr)")
        let held = try Self.heldPort()
        close(held.fd)  // nothing listens there now
        let unreachable = try await CLI.run(["line", "serve", "--db", "postgres://line@127.0.0.1:\(held.port)/line", "--listen", "127.0.0.1:0"])
        #expect(unreachable.status == 69, "\(unreachable.stderr)")
        #expect(unreachable.stderrLines.count == 1 && unreachable.stderr.contains("unreachable"), "\(unreachable.stderr)")
    }
}
