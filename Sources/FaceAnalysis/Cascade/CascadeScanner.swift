/// Evaluates a cascade over every window of one pyramid level, as OpenCV's
/// `CascadeClassifierInvoker` does, and collects the accepted windows in OpenCV's order.
///
/// Speed comes from these things:
/// - Feature corner offsets are laid out per node in stage order and computed for a level only
///   as far as the deepest stage the level reaches.
/// - For stump cascades the first `vectorStages` stages run row by row, one stage at a time over
///   the whole row: a bitmap holds the windows still alive, and each stage covers them with
///   groups of neighbouring windows that start at a live window (eight or four lanes of Int32
///   for Haar, sixteen or eight lanes of Int16 for LBP), so few lanes carry dead windows.
///   On levels scanned every second column the tables are first split into even and odd columns,
///   so windows two pixels apart are consecutive entries and every load is a plain vector load.
/// - OpenCV never evaluates the window after one its first stage rejects. Once stage 0 has run on
///   a row, those windows are dropped, so later stages run only where OpenCV runs.
/// - LBP block sums of at most 32767 (8-bit pixels, blocks of at most 128 pixels) are exact in
///   16 bits, so LBP codes are computed from a 16-bit copy of the sum table, eight windows per
///   128-bit register. Each stump then looks its leaf up in a 256-entry table and the leaves are
///   added per live window in double, exactly as OpenCV adds them.
/// - Haar stages add leaves in float. Each stage carries a bound on how far that can be from
///   OpenCV's double sum; a window whose float sum lies within the bound of the threshold is
///   re-added in double, so every decision is OpenCV's.
///
/// All buffers belong to the scanner and grow only when an image needs more; the scan loop never
/// allocates. A scanner is used by one `detect` call at a time (`ScannerPool` hands it from one
/// call to the next), which is what makes the unchecked `Sendable` sound.
///
/// The scan's rooms each have a file: the levels' tables and offsets (`+Levels`), one window at a
/// time (`+Window`), a row at a time (`+Row`), and the Haar and LBP lanes (`+HaarLanes`,
/// `+LBPLanes`).
final class CascadeScanner: @unchecked Sendable {
    let model: CascadeModel
    /// Stages evaluated row-wide in SIMD before survivors are finished one by one.
    let vectorStages: Int

    /// The cascade's flat buffers, vector order and bounds, shared by every scanner of the cascade.
    let tables: CascadeTables

    // Per level.
    /// Corner offsets per node in node order, in the level's sum table (one window at a time).
    let linearOffsets: Buffer<Int>
    /// Corner offsets per stump in vector order, in the table the vector stages read.
    let vectorOffsets: Buffer<Int>
    /// Nodes (positions) whose linear (vector) offsets are computed for the current level.
    var preparedNodes = 0
    var preparedVector = 0
    var levelRows = 0
    var levelSplit = false
    var linearNorm = (0, 0, 0, 0)
    var vectorNorm = (0, 0, 0, 0)
    var vectorSumNorm = (0, 0, 0, 0)
    var stride = 0
    var vectorStride = 0

    var integral = IntegralImage()
    var levelPixels: [UInt8] = []
    let resizeScratch = Resize.Scratch()
    var splitSum = Buffer<Int32>(count: 0)
    var splitSquares = Buffer<UInt32>(count: 0)
    /// LBP: the level's sum table (split when scanned every second column) truncated to 16 bits.
    var narrowSum = Buffer<Int16>(count: 0)
    /// The current level has only the 16-bit table (see `prepareLevel`).
    var narrowOnly = false
    /// Stands in for the 32-bit tables in the scan context of a level that has none.
    private let placeholder = Buffer<Int32>(count: 1)
    private let placeholderSquares = Buffer<UInt32>(count: 1)
    private(set) var rowNorm = Buffer<Float>(count: 0)
    /// One bit per window position of the row: still to be evaluated by the next stage.
    private(set) var aliveBits = Buffer<UInt64>(count: 0)
    /// One bit per window position of the row: rejected by stage 0.
    private(set) var firstRejectedBits = Buffer<UInt64>(count: 0)
    /// For each byte of stage-0 rejections and whether its first window is skipped: the windows
    /// of the byte OpenCV skips (low 8 bits) and whether the next byte's first one is (bit 8).
    let skipTable: Buffer<UInt16> = {
        var table: [UInt16] = []
        for entry in 0..<512 {
            let rejected = entry & 0xFF
            var skip = entry >> 8, skipped = 0
            for k in 0..<8 {
                skipped |= skip << k
                skip = (rejected >> k) & 1 & ~skip
            }
            table.append(UInt16(skipped | skip << 8))
        }
        return Buffer(table)
    }()
    /// LBP: the codes of one stage's stumps for sixteen windows.
    let codeScratch: Buffer<Int16>
    /// LBP: the stage sums of sixteen windows.
    let laneTotals = Buffer<Double>(count: 16)


    init(model: CascadeModel, tables: CascadeTables, vectorStages: Int? = nil) {
        self.model = model
        self.tables = tables
        self.vectorStages = tables.vectorisable ? min(vectorStages ?? model.stages.count, model.stages.count) : 0
        codeScratch = Buffer(count: 16 * tables.maxStageSize)
        linearOffsets = Buffer(count: tables.cornerX.count)
        vectorOffsets = Buffer(count: tables.cornerX.count)
    }

    // MARK: Scanning

    /// Scans the prepared level: windows at (x, y) with x < `workingWidth`, y < `workingHeight`,
    /// stepping by `step` and skipping the next window after one the first stage rejects.
    /// Accepted windows are appended, mapped back to the image by `scale`.
    func scanLevel(workingWidth: Int, workingHeight: Int, step: Int, scale: Float, into out: inout [Detection]) {
        let winW = Int((Float(model.windowWidth) * scale).rounded(.toNearestOrEven))
        let winH = Int((Float(model.windowHeight) * scale).rounded(.toNearestOrEven))
        let positions = (workingWidth + step - 1) / step
        if rowNorm.count < positions + 32 {
            rowNorm = Buffer(count: positions + 32)
            aliveBits = Buffer(count: positions / 64 + 3)
            firstRejectedBits = Buffer(count: positions / 64 + 3)
        }
        let sum = UnsafePointer(narrowOnly ? placeholder.base : integral.sum.baseAddress ?? placeholder.base)
        let squares = UnsafePointer(narrowOnly ? placeholderSquares.base : integral.squares.baseAddress ?? placeholderSquares.base)
        let c = Context(sum: sum, squares: squares,
                        vectorSum: levelSplit ? UnsafePointer(splitSum.base) : sum,
                        vectorSquares: levelSplit ? UnsafePointer(splitSquares.base) : squares,
                        narrowSum: UnsafePointer(narrowSum.base), rowNorm: rowNorm.base,
                        offsets: linearOffsets.base, vectorOffsets: vectorOffsets.base,
                        norm: linearNorm, vectorNorm: vectorNorm, vectorSumNorm: vectorSumNorm)
        let norm = rowNorm.base, alive = aliveBits.base
        let wholeCascade = vectorStages == tables.stageThreshold.count
        var y = 0
        while y < workingHeight {
            let rowOrigin = y * stride
            if vectorStages > 0 {
                // The windows alive after the vector stages are those OpenCV accepts (or has
                // yet to finish); every window OpenCV skips was dropped after stage 0.
                vectorRow(c, rowOrigin: rowOrigin, vectorRow: y * vectorStride, positions: positions, step: step)
                var i = Self.next(alive, from: 0, limit: positions)
                while i < positions {
                    if wholeCascade || finish(c, origin: rowOrigin + i * step, norm: norm[i], fromStage: vectorStages) > 0 {
                        out.append(Detection(x: Int((Float(i * step) * scale).rounded(.toNearestOrEven)),
                                             y: Int((Float(y) * scale).rounded(.toNearestOrEven)),
                                             width: winW, height: winH))
                    }
                    i = Self.next(alive, from: i + 1, limit: positions)
                }
            } else {
                // Window i of the row is at x = i * step.
                var i = 0
                while i < positions {
                    let result = evaluate(c, origin: rowOrigin + i * step)
                    if result > 0 {
                        out.append(Detection(x: Int((Float(i * step) * scale).rounded(.toNearestOrEven)),
                                             y: Int((Float(y) * scale).rounded(.toNearestOrEven)),
                                             width: winW, height: winH))
                    }
                    i += result == 0 ? 2 : 1
                }
            }
            y += step
        }
    }

    /// Raw pointers for one level's scan.
    struct Context {
        let sum: UnsafePointer<Int32>
        let squares: UnsafePointer<UInt32>
        let vectorSum: UnsafePointer<Int32>
        let vectorSquares: UnsafePointer<UInt32>
        let narrowSum: UnsafePointer<Int16>
        /// The row's norm factors, one per window position.
        let rowNorm: UnsafeMutablePointer<Float>
        let offsets: UnsafePointer<Int>
        let vectorOffsets: UnsafePointer<Int>
        let norm: (Int, Int, Int, Int)
        let vectorNorm: (Int, Int, Int, Int)
        let vectorSumNorm: (Int, Int, Int, Int)
    }
}
