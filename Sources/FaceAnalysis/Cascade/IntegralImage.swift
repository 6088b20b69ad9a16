/// Summed-area tables of an 8-bit gray image, laid out as OpenCV's `integral` lays them out:
/// `(height + 1)` rows of `(width + 1)` entries, a zero first row and column, entry (x, y) the sum
/// over all pixels above and to the left. Sums are 32-bit and wrap exactly as OpenCV's `CV_32S`
/// tables do, so differences over any window are exact.
///
/// The buffers are kept between calls: `compute` on a smaller image reuses them without
/// allocating, which is how the detector walks its pyramid.
public struct IntegralImage: ~Copyable {
    /// Columns of the source image.
    public private(set) var width = 0
    /// Rows of the source image.
    public private(set) var height = 0
    /// Entries from one table row to the next: `width + 1`.
    public var stride: Int { width + 1 }
    /// Plain sums.
    var sum: UnsafeMutableBufferPointer<Int32>
    /// Sums of squares, modulo 2^32.
    var squares: UnsafeMutableBufferPointer<UInt32>
    /// Entries from the plain table to the tilted one inside `sum`: the tilted table (sums over
    /// 45-degree rotated triangles, OpenCV's `tilted`) follows the plain one in the same buffer, so
    /// a feature's offsets can address either.
    public private(set) var tiltedOffset = 0
    /// Work row for the tilted table: one table row widened by `height + 1` on each side.
    private var tiltedRows: UnsafeMutableBufferPointer<Int32>

    /// Entries kept readable past the end of each table.
    static let readPadding = 64

    /// Empty tables; `compute` sizes them.
    public init() {
        sum = .init(start: nil, count: 0)
        squares = .init(start: nil, count: 0)
        tiltedRows = .init(start: nil, count: 0)
    }

    deinit {
        sum.deallocate()
        squares.deallocate()
        tiltedRows.deallocate()
    }

    /// The plain sum at table position (`x`, `y`), 0...width and 0...height.
    public func sum(x: Int, y: Int) -> Int32 { sum[y * stride + x] }
    /// The sum of squares (mod 2^32) at table position (`x`, `y`).
    public func squareSum(x: Int, y: Int) -> UInt32 { squares[y * stride + x] }
    /// The tilted sum at table position (`x`, `y`); only after `compute(..., tilted: true)`.
    public func tiltedSum(x: Int, y: Int) -> Int32 { sum[tiltedOffset + y * stride + x] }

    /// Fills the sum and square-sum tables (and the tilted table when `tilted`) for the
    /// `width` x `height` gray pixels in `pixels`.
    public mutating func compute(_ pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int, tilted wantTilted: Bool) {
        compute(pixels, width: width, height: height, tilted: wantTilted, squares: true)
    }

    /// `compute(_:width:height:tilted:)`, leaving the square-sum table unfilled unless
    /// `squares` (LBP cascades never read it).
    mutating func compute(_ pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int, tilted wantTilted: Bool, squares wantSquares: Bool) {
        precondition(width >= 0 && height >= 0 && pixels.count >= width * height)
        self.width = width
        self.height = height
        let n = (width + 1) * (height + 1)
        tiltedOffset = n
        // Padding past the tables lets the detector load eight or sixteen neighbouring windows at
        // once near the end of a row without reading outside the allocation.
        let pad = Self.readPadding
        if (wantTilted ? 2 * n : n) + pad > sum.count || n + pad > squares.count {
            sum.deallocate(); squares.deallocate()
            sum = .allocate(capacity: (wantTilted ? 2 * n : n) + pad)
            sum.initialize(repeating: 0)
            squares = .allocate(capacity: n + pad)
            squares.initialize(repeating: 0)
        }
        let stride = width + 1
        let s = sum.baseAddress!, q = squares.baseAddress!
        for x in 0..<stride { s[x] = 0; q[x] = 0 }
        if !wantSquares {
            for y in 0..<height {
                let row = pixels.baseAddress! + y * width
                let above = y * stride, here = (y + 1) * stride
                s[here] = 0
                var runSum: Int32 = 0
                for x in 0..<width {
                    runSum &+= Int32(row[x])
                    s[here + x + 1] = runSum &+ s[above + x + 1]
                }
            }
            if wantTilted { computeTilted(pixels, width: width, height: height) }
            return
        }
        for y in 0..<height {
            let row = pixels.baseAddress! + y * width
            let above = (y) * stride, here = (y + 1) * stride
            s[here] = 0
            q[here] = 0
            // Running sums along the row: a dependency chain, kept scalar.
            var runSum: Int32 = 0, runSquares: UInt32 = 0
            for x in 0..<width {
                let v = Int32(row[x])
                runSum &+= v
                runSquares &+= UInt32(v &* v)
                s[here + x + 1] = runSum
                q[here + x + 1] = runSquares
            }
            // Add the row above, eight entries at a time.
            var x = 1
            while x + 8 <= stride {
                let a = UnsafeRawPointer(s + above + x).loadUnaligned(as: SIMD8<Int32>.self)
                let b = UnsafeRawPointer(s + here + x).loadUnaligned(as: SIMD8<Int32>.self)
                UnsafeMutableRawPointer(s + here + x).storeBytes(of: a &+ b, as: SIMD8<Int32>.self)
                let qa = UnsafeRawPointer(q + above + x).loadUnaligned(as: SIMD8<UInt32>.self)
                let qb = UnsafeRawPointer(q + here + x).loadUnaligned(as: SIMD8<UInt32>.self)
                UnsafeMutableRawPointer(q + here + x).storeBytes(of: qa &+ qb, as: SIMD8<UInt32>.self)
                x += 8
            }
            while x < stride {
                s[here + x] &+= s[above + x]
                q[here + x] &+= q[above + x]
                x += 1
            }
        }
        if wantTilted { computeTilted(pixels, width: width, height: height) }
    }

    /// T(X, Y) = sum of pixels (x, y) with y < Y and |x - X + 1| <= Y - y - 1: a triangle with its
    /// apex at (X - 1, Y - 1) opening upwards. By inclusion-exclusion,
    /// T(X, Y) = T(X-1, Y-1) + T(X+1, Y-1) - T(X, Y-2) + I(X-1, Y-1) + I(X-1, Y-2),
    /// evaluated over a row widened by the image height on each side so the triangles that
    /// reach past the left and right edges are counted.
    private mutating func computeTilted(_ pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int) {
        let stride = width + 1
        let n = stride * (height + 1)
        let pad = height + 2
        let wide = stride + 2 * pad
        if tiltedRows.count < 3 * wide {
            tiltedRows.deallocate()
            tiltedRows = .allocate(capacity: 3 * wide)
        }
        let t = sum.baseAddress! + n
        let rows = tiltedRows.baseAddress!
        // Three rolling wide rows: Y-2, Y-1, Y. Wide index i is table column X = i - pad.
        var r2 = rows, r1 = rows + wide, r0 = rows + 2 * wide
        for i in 0..<(3 * wide) { rows[i] = 0 }
        func pixel(_ x: Int, _ y: Int) -> Int32 {
            (x >= 0 && x < width && y >= 0 && y < height) ? Int32(pixels[y * width + x]) : 0
        }
        for x in 0..<stride { t[x] = 0 }
        for y in 1...max(height, 1) where height > 0 {
            for i in 1..<(wide - 1) {
                let X = i - pad
                var v = r1[i - 1] &+ r1[i + 1] &+ pixel(X - 1, y - 1)
                if y >= 2 { v = v &- r2[i] &+ pixel(X - 1, y - 2) }
                r0[i] = v
            }
            r0[0] = 0
            r0[wide - 1] = 0
            for x in 0..<stride { t[y * stride + x] = r0[x + pad] }
            let oldest = r2
            r2 = r1; r1 = r0; r0 = oldest
        }
    }
}
