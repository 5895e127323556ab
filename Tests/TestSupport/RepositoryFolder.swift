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

/// Writes the shipped simulator recipe (recipes/sim-headset.yaml) to `directory`/recipe.yaml with its image paths made
/// absolute (the repository's firmware-images/) and then `edit` applied; returns the file's path. Blocking file I/O:
/// call it off the cooperative pool.
public func writeShippedRecipe(to directory: String, from file: String = #filePath, edit: (String) -> String = { $0 }) throws -> String {
    let text = try String(contentsOfFile: repositoryFolder("recipes", from: file) + "/sim-headset.yaml", encoding: .utf8)
        .replacingOccurrences(of: "../firmware-images", with: repositoryFolder("firmware-images", from: file))
    let path = directory + "/recipe.yaml"
    try edit(text).write(toFile: path, atomically: true, encoding: .utf8)
    return path
}
