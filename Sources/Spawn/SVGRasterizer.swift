import Foundation
import Glibc

/// SVG to PNG with Debian's rsvg-convert (librsvg2-bin): the wearable plot's PNG and the labels' previews.
public enum SVGRasterizer {
    /// rsvg-convert's path on PATH, or nil when it is not installed.
    public static var tool: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/rsvg-convert" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The PNG of the SVG file at `svgPath`, drawn `zoom` times its size, converted in a private temporary directory;
    /// nil when there is no converter or it failed. Blocking (a child process): call it off the cooperative pool.
    public static func png(ofFile svgPath: String, zoom: Double = 1) -> [UInt8]? {
        guard let tool else { return nil }
        var template = Array((NSTemporaryDirectory() + "tuneup-svg-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { return nil }
        let directory = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let converted = directory + "/out.png"
        guard let process = try? ChildProcess(tool, ["-f", "png", "-z", String(zoom), "-o", converted, svgPath], stdout: .null, stderr: .null),
              process.waitUntilExit() == .exit(0), let bytes = FileManager.default.contents(atPath: converted) else { return nil }
        return [UInt8](bytes)
    }

    /// The PNG of an SVG document given as text (written to a private temporary file first); nil as above.
    /// Blocking: call it off the cooperative pool.
    public static func png(of svg: String, zoom: Double = 1) -> [UInt8]? {
        var template = Array((NSTemporaryDirectory() + "tuneup-svg-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { return nil }
        let directory = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/in.svg"
        guard FileManager.default.createFile(atPath: path, contents: Data(svg.utf8)) else { return nil }
        return png(ofFile: path, zoom: zoom)
    }
}
