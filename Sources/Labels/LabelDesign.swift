import Support

/// One unit's label, laid out once and written two ways: ZPL II for the printer and an SVG preview drawn from the
/// same libzint symbols and positions (docs/provisioning.md, "Labels"). Pure: no I/O.
public struct LabelDesign: Sendable, Hashable {
    public var content: LabelContent
    public var symbology: LabelSymbology
    public var layout: LabelLayout

    /// A symbol and where it goes, in dots.
    struct Placed: Sendable, Hashable {
        var symbol: BarcodeSymbol
        var x: Int
        var y: Int
        /// Dots per module across (Code 128: the ZPL `^BY` width) and down.
        var moduleWidth: Int
        var moduleHeight: Double
        /// The human-readable line under (Code 128) or beside (DataMatrix) the symbol.
        var caption: String
    }

    let placed: [Placed]

    /// Lays the label out: the values are checked and encoded (a value no barcode can carry, or one too long for the
    /// label, is refused here, before anything is written or sent).
    public init(_ content: LabelContent, symbology: LabelSymbology = .code128, layout: LabelLayout = .init()) throws(LabelError) {
        try content.check()
        self.content = content
        self.symbology = symbology
        self.layout = layout
        var placed: [Placed] = []
        switch symbology {
        case .code128:
            var values = [(content.serial, layout.firstBarcodeY)]
            if let address = content.bluetoothAddress { values.append((address, layout.secondBarcodeY)) }
            for (value, y) in values {
                let symbol = try BarcodeSymbol.code128(value)
                guard let width = layout.moduleWidth(forModules: symbol.columns) else {
                    throw LabelError(.unprintable, "'\(value)' is too long for a Code 128 symbol on a \(layout.width)-dot label")
                }
                placed.append(Placed(symbol: symbol, x: layout.margin, y: y, moduleWidth: width,
                                     moduleHeight: Double(layout.barHeight), caption: value))
            }
        case .datamatrix:
            let symbol = try BarcodeSymbol.gs1DataMatrix(content.gs1Elements)
            let module = layout.matrixModule
            if layout.firstBarcodeY + symbol.rows * module > layout.height - layout.margin / 2 {
                throw LabelError(.unprintable, "the DataMatrix of '\(content.serial)' is too large for a \(layout.height)-dot label")
            }
            placed.append(Placed(symbol: symbol, x: layout.margin, y: layout.firstBarcodeY, moduleWidth: module,
                                 moduleHeight: Double(module), caption: ""))
        }
        self.placed = placed
    }

    /// The text lines beside a DataMatrix.
    var matrixLines: [String] {
        ["SN \(content.serial)"] + (content.bluetoothAddress.map { ["BT \($0)"] } ?? [])
    }

    // MARK: ZPL II

    /// The label in ZPL II (UTF-8, `^CI28`), one command per line.
    public var zpl: String {
        var lines = ["^XA", "^CI28", "^PW\(layout.width)", "^LL\(layout.height)", "^LH0,0"]
        lines.append("^FO\(layout.margin),\(layout.titleY)^A0N,\(layout.titleSize),\(layout.titleSize)^FH\\^FD\(Self.fieldHex(content.product))^FS")
        switch symbology {
        case .code128:
            for p in placed {
                // Automatic code sets (mode A), as libzint chooses them for the preview: the same bars.
                lines.append("^FO\(p.x),\(p.y)^BY\(p.moduleWidth)^BCN,\(Int(p.moduleHeight)),Y,N,N,A^FD\(p.caption)^FS")
            }
        case .datamatrix:
            let p = placed[0]
            // ECC 200 with `_` as the escape character: `_1` is FNC1 (the GS1 start, and the separator after the
            // variable-length serial); a literal underscore is `__`.
            let data = content.gs1Elements.map { "_1\($0.ai)\($0.value.replacingOccurrences(of: "_", with: "__"))" }.joined()
            lines.append("^FO\(p.x),\(p.y)^BXN,\(p.moduleWidth),200,,,,_^FD\(data)^FS")
            let textX = p.x + p.symbol.columns * p.moduleWidth + layout.margin
            for (i, line) in matrixLines.enumerated() {
                let y = p.y + i * (layout.textSize + 12)
                lines.append("^FO\(textX),\(y)^A0N,\(layout.textSize),\(layout.textSize)^FH\\^FD\(Self.fieldHex(line))^FS")
            }
        }
        lines.append("^XZ")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Field data for `^FH\`: printable ASCII as is; `^`, `~`, `\` and every byte of other characters as `\HH`.
    static func fieldHex(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if (0x20...0x7E).contains(byte), byte != UInt8(ascii: "^"), byte != UInt8(ascii: "~"), byte != UInt8(ascii: "\\") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "\\" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    // MARK: SVG preview

    /// The label as SVG, one user unit per printer dot: white ground, the product name, the symbols' modules as
    /// rectangles from libzint, the human-readable lines.
    public var svg: String {
        let font = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(layout.width)" height="\(layout.height)" viewBox="0 0 \(layout.width) \(layout.height)">
            <rect width="\(layout.width)" height="\(layout.height)" fill="#fff"/>
            <text x="\(layout.margin)" y="\(layout.titleY + layout.titleSize - 4)" font-size="\(layout.titleSize)" font-weight="bold" \(font)>\(Markup.escape(content.product))</text>

            """
        for p in placed {
            var path = ""
            for bar in p.symbol.bars {
                let x = Double(p.x) + bar.x * Double(p.moduleWidth)
                let y = Double(p.y) + bar.y * p.moduleHeight
                path += "M\(Self.number(x)) \(Self.number(y))h\(Self.number(bar.width * Double(p.moduleWidth)))v\(Self.number(bar.height * p.moduleHeight))h\(Self.number(-bar.width * Double(p.moduleWidth)))z"
            }
            out += "<path fill=\"#000\" shape-rendering=\"crispEdges\" d=\"\(path)\"/>\n"
            if !p.caption.isEmpty {
                let y = p.y + Int(p.moduleHeight) + layout.textSize
                let centre = p.x + p.symbol.columns * p.moduleWidth / 2
                out += "<text x=\"\(centre)\" y=\"\(y)\" font-size=\"\(layout.textSize)\" text-anchor=\"middle\" \(font)>\(Markup.escape(p.caption))</text>\n"
            }
        }
        if symbology == .datamatrix, let p = placed.first {
            let textX = p.x + p.symbol.columns * p.moduleWidth + layout.margin
            for (i, line) in matrixLines.enumerated() {
                let y = p.y + i * (layout.textSize + 12) + layout.textSize
                out += "<text x=\"\(textX)\" y=\"\(y)\" font-size=\"\(layout.textSize)\" \(font)>\(Markup.escape(line))</text>\n"
            }
        }
        return out + "</svg>\n"
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String((value * 100).rounded() / 100)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
