import ArgumentParser
import Foundation
import Glibc
import Support
import Terminal
import Transport

/// The CLI's one way of running a command: parse (a usage error is one line and exit 64; `--help` prints help),
/// run with SIGINT/SIGTERM/SIGHUP turned into cancellation, and turn any failure into one stderr line and an exit
/// code (`failureExit`). A failed write to stdout or stderr turns a success into exit 74.
enum CommandRunner {
    static func run(_ arguments: [String]) async -> Int32 {
        var command: ParsableCommand
        do {
            command = try parse(arguments)
        } catch {
            if Tuneup.exitCode(for: error) == .success {
                // --help, --version, `tuneup help X`: the parser prints them.
                Console.flush()
                Tuneup.exit(withError: error)
            }
            printError(usageLine(error, arguments))
            return Exit.usage
        }

        var code: Int32 = 0
        if command is HandlesItsOwnSignals {
            code = await execute(&command)
        } else {
            let box = CommandBox(command)
            let task = Task { await execute(box) }
            Interrupts.install(warn: { printError($0) }) { task.cancel() }
            code = await task.value
        }
        if code == 0, let failure = Console.outputFailure {
            printError(failure)
            code = Exit.localIO
        }
        return code
    }

    private static func execute(_ box: CommandBox) async -> Int32 {
        var command = box.command
        return await execute(&command)
    }

    private static func execute(_ command: inout ParsableCommand) async -> Int32 {
        do {
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                // A synchronous command (images: files, hashes, signatures) blocks: it runs on the blocking executor.
                let box = CommandBox(command)
                try await Blocking.perform("command") { var command = box.command; try command.run() }
            }
            if let signal = Interrupts.received { return 128 + signal }
            return 0
        } catch {
            if !(error is ExitCode), Tuneup.exitCode(for: error) == .success {
                // `tuneup help COMMAND` ends its run this way: the parser prints the help.
                Console.flush()
                Tuneup.exit(withError: error)
            }
            return failureExit(error).rawValue
        }
    }

    /// Parses `arguments` after moving a subcommand name written after its parent's options (`anc --format json
    /// on`) in front of them, and refuses `tuneup help NAME` for a command that does not exist.
    static func parse(_ arguments: [String]) throws -> ParsableCommand {
        let arguments = joiningNegativeValues(reorderingSubcommands(arguments))
        if arguments.first == "help" {
            var type: ParsableCommand.Type = Tuneup.self
            for name in arguments.dropFirst() where !name.hasPrefix("-") {
                guard let sub = type.configuration.subcommands.first(where: { $0.configuration.commandName == name || $0._commandName == name }) else {
                    throw ValidationError("unknown command '\(arguments.dropFirst().joined(separator: " "))'")
                }
                type = sub
            }
        }
        try refuseUnknownSubcommand(arguments)
        return try Tuneup.parseAsRoot(arguments)
    }

    /// `--option -20` as `--option=-20`: the parser takes a word starting with '-' for an option, so a negative value
    /// (`speaker receive --latency-ms -20`, documented) came out as "Missing value", and a negative where none is
    /// allowed (`events --duration -1`) never reached the check that says why. No option of the tool is a dash and a
    /// digit; words after `--` are left alone.
    static func joiningNegativeValues(_ arguments: [String]) -> [String] {
        var result: [String] = []
        var i = 0
        while i < arguments.count {
            let word = arguments[i]
            if word == "--" { return result + arguments[i...] }
            if word.hasPrefix("--"), !word.contains("="), i + 1 < arguments.count, isNegativeNumber(arguments[i + 1]) {
                result.append(word + "=" + arguments[i + 1])
                i += 2
                continue
            }
            result.append(word)
            i += 1
        }
        return result
    }

    /// "-1", "-0.5", "-20ms", "-3s": a dash, then a digit or a point and a digit.
    private static func isNegativeNumber(_ word: String) -> Bool {
        let rest = word.utf8.dropFirst()
        guard word.utf8.first == UInt8(ascii: "-"), let first = rest.first else { return false }
        if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) { return true }
        return first == UInt8(ascii: ".") && rest.dropFirst().first.map { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } == true
    }

    /// A word where a command without a default subcommand expects one (`records frobnicate --db X`) is named as an
    /// unknown subcommand, not as the first option after it the parser cannot place.
    static func refuseUnknownSubcommand(_ arguments: [String]) throws {
        var type: ParsableCommand.Type = Tuneup.self
        var path = ["tuneup"]
        for word in arguments {
            let subs = type.configuration.subcommands
            guard !subs.isEmpty, !word.hasPrefix("-") else { return }
            guard let sub = subs.first(where: { $0._commandName == word || $0.configuration.aliases.contains(word) }) else {
                guard type.configuration.defaultSubcommand == nil, path.count > 1 else { return }
                throw ValidationError("'\(word)' is not a subcommand of '\(path.joined(separator: " "))' (\(subs.map { $0._commandName }.joined(separator: ", ")))")
            }
            path.append(word)
            type = sub
        }
    }

    /// Options every command takes, with (true) or without (false) a value.
    private static let sharedOptions: [String: Bool] = [
        "--format": true, "--device": true, "-d": true, "--timeout": true, "--retries": true, "--poll-interval": true, "--usb-backend": true,
        "--wait": true, "--verbose": false, "-v": false,
    ]

    static func reorderingSubcommands(_ arguments: [String]) -> [String] {
        var type: ParsableCommand.Type = Tuneup.self
        var result: [String] = []
        var rest = arguments[...]
        while let first = rest.first, !first.hasPrefix("-"),
              let sub = type.configuration.subcommands.first(where: { $0._commandName == first }) {
            result.append(first)
            rest = rest.dropFirst()
            type = sub
            let names = Set(sub.configuration.subcommands.map { $0._commandName })
            guard !names.isEmpty else { break }
            // Skip shared options (and their values) to the first word; move it forward if it names a subcommand.
            var i = rest.startIndex
            while i < rest.endIndex, let takesValue = sharedOptions[rest[i]] { i += takesValue ? 2 : 1 }
            if i > rest.startIndex, i < rest.endIndex, names.contains(rest[i]) {
                let name = rest[i]
                var moved = Array(rest)
                moved.remove(at: i - rest.startIndex)
                rest = ([name] + moved)[...]
            }
        }
        return result + rest
    }

    /// One line for a parse error, naming the command's help.
    static func usageLine(_ error: Error, _ arguments: [String]) -> String {
        let message = Tuneup.message(for: error)
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.first { !$0.isEmpty } ?? "bad arguments"
        var path: [String] = []
        var type: ParsableCommand.Type = Tuneup.self
        for word in arguments {
            guard let sub = type.configuration.subcommands.first(where: { $0._commandName == word }) else { break }
            path.append(word)
            type = sub
        }
        let help = (["tuneup"] + path + ["--help"]).joined(separator: " ")
        let text = message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message
        return "\(text) (see '\(help)')"
    }
}

/// Commands that handle SIGINT/SIGTERM themselves (the simulator stops on them and exits 0).
protocol HandlesItsOwnSignals {}

/// Carries the parsed command into the task that runs it (it is only used there).
private final class CommandBox: @unchecked Sendable {
    let command: ParsableCommand
    init(_ command: ParsableCommand) { self.command = command }
}
