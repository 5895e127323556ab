import Foundation

/// The repository's folder `relative` (e.g. "firmware-images"): the first directory above the calling test file that
/// holds it, joined with it (the test targets find the repository's fixtures this way, wherever it is checked out).
public func repositoryFolder(_ relative: String, from file: String = #filePath) -> String {
    var url = URL(fileURLWithPath: file)
    while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent(relative).path) {
        url.deleteLastPathComponent()
    }
    return url.appendingPathComponent(relative).path
}
