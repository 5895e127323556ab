import CZint

/// A barcode symbol encoded by libzint: its dark modules as rectangles, in module units (one module = 1 × 1).
/// Pure computation (no I/O); libzint's symbols are independent, so any thread may encode.
public struct BarcodeSymbol: Sendable, Hashable {
    public struct Rectangle: Sendable, Hashable {
        public var x, y, width, height: Double
    }

    /// Columns and rows of modules (a linear symbol has one row: its bars are `rows` high).
    public var columns: Int
    public var rows: Int
    public var bars: [Rectangle]

    /// A Code 128 symbol of `text` (libzint picks the code sets, as a ZPL printer's automatic mode does).
    public static func code128(_ text: String) throws(LabelError) -> BarcodeSymbol {
        try encode(symbology: BARCODE_CODE128, inputMode: Int32(UNICODE_MODE), data: text)
    }

    /// A GS1 DataMatrix (ECC 200) of the element string (AIs and values; libzint puts FNC1 where GS1 wants it).
    public static func gs1DataMatrix(_ elements: [(ai: String, value: String)]) throws(LabelError) -> BarcodeSymbol {
        try encode(symbology: BARCODE_DATAMATRIX, inputMode: Int32(GS1_MODE),
                   data: elements.map { "[\($0.ai)]\($0.value)" }.joined())
    }

    private static func encode(symbology: Int32, inputMode: Int32, data: String) throws(LabelError) -> BarcodeSymbol {
        guard let symbol = ZBarcode_Create() else { throw LabelError(.unprintable, "libzint could not allocate a symbol") }
        defer { ZBarcode_Delete(symbol) }
        symbol.pointee.symbology = symbology
        symbol.pointee.input_mode = inputMode
        symbol.pointee.show_hrt = 0
        symbol.pointee.scale = 1
        symbol.pointee.whitespace_width = 0
        symbol.pointee.whitespace_height = 0
        symbol.pointee.border_width = 0
        let bytes = Array(data.utf8)
        let status = bytes.withUnsafeBufferPointer {
            ZBarcode_Encode_and_Buffer_Vector(symbol, $0.baseAddress, Int32($0.count), 0)
        }
        if status >= ZINT_ERROR {
            let reason = withUnsafeBytes(of: symbol.pointee.errtxt) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            throw LabelError(.unprintable, "'\(data)' cannot be encoded as a barcode: \(reason)")
        }
        guard let vector = symbol.pointee.vector, symbol.pointee.width > 0 else {
            throw LabelError(.unprintable, "libzint made no symbol of '\(data)'")
        }
        let columns = Int(symbol.pointee.width)
        let rows = Int(max(symbol.pointee.rows, 1))
        // The vector's units per module, across; down, a linear symbol's bars are scaled to `rows` (one).
        let unit = Double(vector.pointee.width) / Double(columns)
        let down = rows == 1 ? Double(vector.pointee.height) : unit
        var bars: [Rectangle] = []
        var rectangle = vector.pointee.rectangles
        while let r = rectangle {
            if r.pointee.colour == -1 || r.pointee.colour == 7 {
                bars.append(Rectangle(x: Double(r.pointee.x) / unit, y: Double(r.pointee.y) / down,
                                      width: Double(r.pointee.width) / unit, height: Double(r.pointee.height) / down))
            }
            rectangle = r.pointee.next
        }
        if bars.isEmpty { throw LabelError(.unprintable, "libzint drew no modules for '\(data)'") }
        return BarcodeSymbol(columns: columns, rows: rows, bars: bars)
    }
}
