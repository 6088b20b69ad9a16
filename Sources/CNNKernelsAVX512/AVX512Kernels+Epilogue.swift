import _Builtin_intrinsics.intel
import CNNKernels

extension AVX512Kernels {
    /// `NetworkKernels.Epilogue` for one block of 16 output channels (or a last block of 8),
    /// sixteen lanes at once, with what every pixel shares loaded once: the ReLUs as `vmaxps`
    /// against a floor (0, or -infinity for none: `NetworkKernels.relu8`'s results, -0 kept), the
    /// residual as a masked load and masked add over the lanes whose channels it has (lanes
    /// without one are left as they are, as the 8-wide epilogue leaves them), and a masked store
    /// of the block's real lanes. The same operations per lane as the 8-wide epilogue, so the
    /// same bits; the 8-wide one took each half's branches and loads per pixel.
    struct BlockEpilogue {
        let floorBefore: SIMD16<Float>
        let floorAfter: SIMD16<Float>
        let residual: UnsafePointer<Float>?
        let residualStride: Int
        let residualLanes: UInt16
        let output: UnsafeMutablePointer<Float>
        let outStride: Int
        let lanes: UInt16

        @inline(__always)
        init(_ epilogue: NetworkKernels.Epilogue, channel o: Int, output: UnsafeMutablePointer<Float>, outStride: Int) {
            floorBefore = SIMD16(repeating: epilogue.reluBeforeAdd ? 0 : -.infinity)
            floorAfter = SIMD16(repeating: epilogue.reluAfterAdd ? 0 : -.infinity)
            residualStride = epilogue.residualStride
            let residualChannels = min(16, max(0, epilogue.residualStride - o))
            residualLanes = residualChannels >= 16 ? 0xFFFF : UInt16((1 << residualChannels) - 1)
            residual = epilogue.residual.flatMap { residualChannels > 0 ? $0 + o : nil }
            self.output = output + o
            self.outStride = outStride
            lanes = outStride - o >= 16 ? 0xFFFF : 0x00FF
        }

        /// Applies the epilogue to `v` (sums with the bias) and stores it as pixel `p`'s block.
        @inline(__always)
        func store(_ v: SIMD16<Float>, pixel p: Int) {
            var v = _mm512_max_ps(floorBefore, v)
            if let residual {
                let r = _mm512_maskz_loadu_ps(residualLanes, UnsafeRawPointer(residual + p &* residualStride))
                v = _mm512_mask_add_ps(v, residualLanes, v, r)
            }
            v = _mm512_max_ps(floorAfter, v)
            _mm512_mask_storeu_ps(UnsafeMutableRawPointer(output + p &* outStride), lanes, v)
        }
    }
}
