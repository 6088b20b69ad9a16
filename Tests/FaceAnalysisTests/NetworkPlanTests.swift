@testable import FaceAnalysis
import Testing

/// The buffer plan of BlazeFace's network: tensors share slots only when one is dead before the
/// other is written, except that a residual add read for the last time writes its sum over the
/// residual (each value reads only its own place). Whether the shared slots compute the right
/// values is `BlazeFaceParityTests` (against TF Lite) and `Int8NetworkTests`; this pins the plan.
@Suite struct NetworkPlanTests {
    static func plans() throws -> [(String, ConvolutionalNetwork)] {
        let file = try NetworkFile.load(Fixtures.modelsDirectory + "/blazeface-full-range.pdnn")
        let calibration = try Int8NetworkTests.calibration(file)
        return try [(192, 192), (448, 448), (256, 384)].flatMap { size in
            try [NetworkPrecision.fp32, .int8].map { precision in
                ("\(size.0)x\(size.1) \(precision)",
                 try ConvolutionalNetwork(file: file, inputSize: size, precision: precision, calibration: calibration))
            }
        }
    }

    @Test("no step writes a slot a live tensor still needs; residual adds write over their residual")
    func slotsNeverOverlapLiveTensors() throws {
        for (name, plan) in try Self.plans() {
            // Each tensor lives from the step that writes it (-1: the input) to its last reader
            // (the end for outputs).
            var born: [Int: Int] = [plan.inputTensor: -1], lastRead: [Int: Int] = [:]
            for (s, step) in plan.steps.enumerated() {
                born[step.output] = s
                for id in step.reads { lastRead[id] = s }
            }
            for id in plan.outputs.values { lastRead[id] = plan.steps.count }
            var inPlace = 0
            for (s, step) in plan.steps.enumerated() {
                guard let layout = plan.layouts[step.output], plan.slotSizes[layout.slot] > 0 else { continue }
                #expect(layout.floats <= plan.slotSizes[layout.slot], "\(name): step \(s) overflows its slot")
                for (other, otherLayout) in plan.layouts where other != step.output && otherLayout.slot == layout.slot {
                    guard let otherBorn = born[other], otherBorn < s, let otherEnd = lastRead[other], otherEnd >= s else { continue }
                    // Only a residual (either addend of an add) read for the last time by this very
                    // step may share its slot.
                    let residuals: [Int]
                    if case .add = step { residuals = step.reads } else { residuals = Array(step.reads.dropFirst()) }
                    let sharesResidual = otherEnd == s && residuals.contains(other)
                    #expect(sharesResidual, "\(name): step \(s) writes tensor \(other)'s slot while it is live (to step \(otherEnd))")
                    if sharesResidual {
                        #expect(otherLayout.stride == layout.stride && otherLayout.pixels == layout.pixels,
                                "\(name): step \(s) writes over a residual of another shape")
                        inPlace += 1
                    }
                }
            }
            // BlazeFace's residual blocks end in a 1x1 convolution with the add folded in: most of
            // them write in place (all but those whose residual another block still reads).
            #expect(inPlace >= 10, "\(name): only \(inPlace) residual adds write in place")
        }
    }

    @Test("the face descriptor's plan: no step writes a live tensor's slot but the residual it adds", arguments: FaceDescriptorNetwork.Precision.allCases)
    func descriptorSlotsNeverOverlapLiveTensors(precision: FaceDescriptorNetwork.Precision) throws {
        let network = try FaceDescriptorNetwork(contentsOf: Fixtures.modelsDirectory + "/" + FaceDescriptorNetwork.fileName, precision: precision)
        var born: [Int: Int] = [0: -1], lastRead: [Int: Int] = [network.output: network.steps.count]
        for (s, step) in network.steps.enumerated() {
            born[step.output] = s
            for id in step.inputs { lastRead[id] = max(lastRead[id] ?? s, s) }
        }
        var inPlace = 0
        for (s, step) in network.steps.enumerated() {
            let slot = try #require(network.slots[step.output])
            #expect(network.shapes[step.output]!.floats <= network.slotSizes[slot], "step \(s) overflows its slot")
            for (other, otherSlot) in network.slots where other != step.output && otherSlot == slot {
                guard let otherBorn = born[other], otherBorn < s, let otherEnd = lastRead[other], otherEnd >= s else { continue }
                var residual: Int?
                if case let .integerConvolution(_, _, _, _, r?, _) = step { residual = r }
                #expect(otherEnd == s && other == residual, "step \(s) writes tensor \(other)'s slot while it is live (to step \(otherEnd))")
                #expect(network.shapes[other] == network.shapes[step.output])
                inPlace += 1
            }
        }
        // At int16 the second convolution of each block that keeps its size adds its residual in
        // its epilogue, over the residual; fp32 runs its adds as steps of their own.
        if precision == .int16 { #expect(inPlace >= 5, "only \(inPlace) residual adds write in place") } else { #expect(inPlace == 0) }
    }
}
