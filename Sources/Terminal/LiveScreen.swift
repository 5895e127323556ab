import Glibc
import Progress
import Synchronization

/// The one live view of the tools on a terminal (a station's slots, a wearable's readings): a block of lines redrawn
/// in place, cut to the terminal's width and height. Pure: it makes the text to write, the caller writes it
/// (`LiveDisplay` does, through `Console`).
public struct LiveScreen: Sendable {
    /// The block drawn last (its lines cut to the width; the next frame starts that many screen rows up).
    private var region = LiveRegion()

    public init() {}

    /// The lines shown for `lines` on a terminal of `size`: each cut to the width (`LiveRegion.fit`), and at most
    /// `rows - 1` of them (the block is redrawn from its first row and the cursor rests on the row below it: a taller
    /// block scrolls, leaving a copy in the scrollback at every redraw), the last kept one saying how many are left out.
    public static func visible(_ lines: [String], size: TerminalSize) -> [String] {
        var kept = lines
        if let rows = size.rows, rows > 0, lines.count > max(1, rows - 1) {
            let room = max(1, rows - 1)
            kept = room == 1 ? [lines[0]] : Array(lines.prefix(room - 1)) + ["… \(lines.count - room + 1) more lines (a taller terminal shows them)"]
        }
        return kept.map { LiveRegion.fit($0, columns: size.columns) }
    }

    /// The text that replaces the block drawn last with `lines` on a terminal of `size`.
    public mutating func frame(_ lines: [String], size: TerminalSize) -> String {
        region.frame(Self.visible(lines, size: size), columns: size.columns)
    }

    /// The text that clears the block and leaves the cursor where it began, so plain lines can be printed there (the
    /// next frame draws below them).
    public mutating func clear() -> String { region.clear() }
}

/// A `LiveScreen` on a terminal: redrawn at most 10 times a second (always when forced), written through `Console`
/// to `fd` at the terminal's size at each redraw (a resized window is followed).
public final class LiveDisplay: Sendable {
    private let fd: Int32
    private let state: Mutex<(screen: LiveScreen, lastDraw: ContinuousClock.Instant)>

    public init(fd: Int32 = STDOUT_FILENO) {
        self.fd = fd
        state = Mutex((LiveScreen(), ContinuousClock.now - .seconds(1)))
    }

    /// Redraws the block with `lines()` unless it was drawn less than 0.1 s ago (`force`: always).
    public func draw(force: Bool, _ lines: () -> [String]) {
        let size = TerminalSize.of(fd)
        state.withLock { s in
            let now = ContinuousClock.now
            guard force || now - s.lastDraw >= .milliseconds(100) else { return }
            s.lastDraw = now
            Console.write(s.screen.frame(lines(), size: size), to: fd)
        }
    }

    /// Clears the block, so a plain line can be printed where it was (the next frame draws below it).
    public func clear() {
        state.withLock { s in
            let text = s.screen.clear()
            if !text.isEmpty { Console.write(text, to: fd) }
        }
    }

    /// Prints `line` above the block: the block is cleared, the line written, and the block redrawn by the next draw.
    public func print(_ line: String) {
        clear()
        Console.write(line + "\n", to: fd)
    }
}
