/// A block of lines redrawn in place on a terminal (a station's slots, a wearable's live readings, a flash's
/// progress bar). Pure: it makes the text to write, the caller writes it.
///
/// Every line is cut to the terminal's width before it is drawn: a line one column too wide wraps onto a second
/// screen row, and moving up by the number of *lines* drawn then leaves a row behind at every redraw, so the block
/// creeps down the screen. Cut lines end with "…". The cursor is moved up by the screen rows drawn last time.
public struct LiveRegion: Sendable {
    /// Screen rows drawn by the last frame (the next one starts that many rows up).
    public private(set) var drawnRows = 0

    public init() {}

    /// The text that replaces the block drawn last with `lines`, on a terminal `columns` wide (nil or less than 2:
    /// the width is unknown, and 80 is assumed).
    public mutating func frame(_ lines: [String], columns: Int?) -> String {
        let width = Self.usableWidth(columns)
        var text = drawnRows > 0 ? "\u{1B}[\(drawnRows)A" : ""
        for line in lines {
            text += "\r" + Self.fit(line, columns: width) + "\u{1B}[K\n"
        }
        // Rows of a taller block drawn last that this one does not cover are cleared.
        if lines.count < drawnRows { text += "\u{1B}[J" }
        drawnRows = lines.count
        return text
    }

    /// The text that clears the block and leaves the cursor where it began, so plain lines can be printed there (the
    /// next frame draws below them).
    public mutating func clear() -> String {
        defer { drawnRows = 0 }
        return drawnRows > 0 ? "\u{1B}[\(drawnRows)A\r\u{1B}[J" : ""
    }

    /// `line` cut to fit `columns` screen columns without wrapping (one column is left free: some terminals wrap on
    /// writing the last one). Control characters are dropped; a character is one column (two for the wide East Asian
    /// ranges and emoji).
    public static func fit(_ line: String, columns: Int?) -> String {
        let limit = usableWidth(columns) - 1
        var out = ""
        var used = 0
        var characters = line.makeIterator()
        while let character = characters.next() {
            guard let first = character.unicodeScalars.first, first.value >= 0x20, first.value != 0x7F else { continue }
            let cost = width(of: character)
            if used + cost > limit {
                // Room for the ellipsis: drop what does not fit before it.
                while used + 1 > limit, let last = out.popLast() { used -= width(of: last) }
                return out + "…"
            }
            out.append(character)
            used += cost
        }
        return out
    }

    static func usableWidth(_ columns: Int?) -> Int {
        guard let columns, columns >= 2 else { return 80 }
        return columns
    }

    /// Screen columns of one character: 2 for wide (CJK, fullwidth forms, emoji), else 1.
    static func width(of character: Character) -> Int {
        guard let scalar = character.unicodeScalars.first else { return 0 }
        switch scalar.value {
        case 0x1100...0x115F, 0x2E80...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
             0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD:
            return 2
        default:
            return 1
        }
    }
}
