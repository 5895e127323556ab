import Foundation
import Testing

/// The CLI links only what most commands need: the libraries one command needs (audio decoding, resampling, web
/// streams, the receiver's sound card, CFX publishing) are opened with dlopen when that command first uses them
/// (CLazyLibrary). Linked, alsa-lib and Qpid Proton (with the libssl and libcrypto it brings) cost every start about
/// a millisecond and a half of the loader's symbol lookups (docs/packaging.md, "Start-up").
@Suite struct LinkedLibrariesTests {
    static let openedOnFirstUse = ["libasound", "libqpid-proton", "libssl", "libcrypto", "libsndfile", "libsoxr", "libcurl"]

    @Test func theCLILinksNoLibraryThatOnlyOneCommandNeeds() async throws {
        let result = try await offThePool {
            try CLI.runProcess(URL(fileURLWithPath: "/usr/bin/readelf"), ["-d", CLI.binary.path], environment: [:], timeout: 60,
                               name: "readelf -d tuneup")
        }
        #expect(result.status == 0, "\(result.stderr)")
        // "0x0000000000000001 (NEEDED)  Shared library: [libc.so.6]"
        let needed = result.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line -> String? in
            guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
            return String(line[line.index(after: open)..<close])
        }
        #expect(needed.contains { $0.hasPrefix("libc.so") }, "\(needed)")
        let linked = needed.filter { library in Self.openedOnFirstUse.contains { library.hasPrefix($0 + ".") || library.hasPrefix($0 + "-") } }
        #expect(linked.isEmpty, "linked: \(linked)")
    }
}
