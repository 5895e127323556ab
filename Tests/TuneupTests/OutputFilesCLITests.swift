import Foundation
import Glibc
import Testing

/// Issue 31: one rule for output files (docs/cli.md "Output files"), the strict one, for every command: the bootloader
/// dump (`firmware read -o`) refused a FIFO but wrote a symbolic link's target; now a link is refused with one line and
/// exit 74, before the device is touched, and neither the link nor its target changes.
@Suite(.serialized) struct OutputFilesCLITests {
    static func kind(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & S_IFMT
    }

    @Test func firmwareReadRefusesASymbolicLinkBeforeTheDeviceIsTouched() async throws {
        let sim = try await RunningSimulator.start(["--time-scale", "0"])
        let device = sim.addresses[0]
        let dir = Scratch.directory
        try await offThePool { try Data("kept".utf8).write(to: URL(fileURLWithPath: dir + "/real.img")) }
        #expect(symlink("real.img", dir + "/link.img") == 0)
        let r = try await CLI.run(["firmware", "read", "--region", "app", "-o", dir + "/link.img", "--device", device])
        #expect(r.status == 74 && r.stderrLines == ["tuneup: cannot write \(dir)/link.img: it is a symbolic link (outputs are never written "
            + "through a link: name the file itself)"], "\(r.stderr)")
        #expect(Self.kind(dir + "/link.img") == S_IFLNK, "the link is still a link")
        #expect(try await offThePool { try String(contentsOfFile: dir + "/real.img", encoding: .utf8) } == "kept", "its target is untouched")
        // Refused before the read: the device was never taken to its bootloader.
        let status = try json(try await CLI.run(["bootloader", "status", "--device", device, "--format", "json"]).stdout)
        #expect(status["mode"] as? String == "application")

        // The file itself is written (a regular file replaced whole), and a FIFO is refused as before.
        let written = try await CLI.run(["firmware", "read", "--region", "app", "-o", dir + "/real.img", "--device", device])
        #expect(written.status == 0, "\(written.stderr)")
        let (factory, read) = try await offThePool {
            (try Data(contentsOf: URL(fileURLWithPath: images + "/app-1.4.2.img")), try Data(contentsOf: URL(fileURLWithPath: dir + "/real.img")))
        }
        #expect(read == factory, "the read-back is the factory image")
        #expect(mkfifo(dir + "/pipe.img", 0o600) == 0)
        let fifo = try await CLI.run(["firmware", "read", "--region", "app", "-o", dir + "/pipe.img", "--device", device])
        #expect(fifo.status == 74 && fifo.stderrLines.count == 1 && fifo.stderr.contains("it is a FIFO"), "\(fifo.stderr)")
        #expect(Self.kind(dir + "/pipe.img") == S_IFIFO)
        #expect(await sim.quit() == 0)
    }
}
