import Foundation

/// A folder of photos with hand-labelled face boxes: `labels.json` beside the photos, as in
/// `Tests/FaceAnalysisTests/Fixtures/LabelledPhotos`:
///
/// ```
/// { "photos": [ { "file": "a.jpg", "width": 600, "height": 400, "kind": "group",
///                 "faces": [ { "box": [x, y, w, h], "hard": false } ] } ] }
/// ```
/// Boxes are in the upright photo's pixels. A `hard` face (tiny, mostly hidden, in profile,
/// blurred) counts neither as missed nor, when a box lands on it, as a false face.
public struct LabelledPhotos: Sendable {
    /// One labelled face.
    public struct Face: Codable, Sendable, Equatable {
        public var box: [Int]
        public var hard: Bool
    }

    /// One labelled photo.
    public struct Photo: Codable, Sendable, Equatable {
        public var file: String
        public var width: Int
        public var height: Int
        /// `group`, `people` or `no-people`.
        public var kind: String
        /// What a photo without people shows: `animal`, `painting`, `landscape`, `object`.
        public var subject: String?
        public var faces: [Face]

        /// Whether a person would say the photo shows faces: it has a face that is not hard.
        public var hasFaces: Bool { faces.contains { !$0.hard } }
    }

    private struct File: Codable {
        var photos: [Photo]
    }

    /// The folder the photos are in.
    public let directory: String
    /// The photos, in the file's order.
    public let photos: [Photo]

    /// Reads `labels.json` in `directory`. Throws `unreadableSample` when it is missing or not in
    /// the format above, or a box is not four numbers with a positive size.
    public init(directory: String) throws(FaceAnalysisError) {
        let path = directory + "/labels.json"
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FaceAnalysisError(.unreadableSample, "no labels.json in \(directory)", path: path)
        }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch {
            throw FaceAnalysisError(.unreadableSample, "labels.json is not a list of labelled photos", path: path, cause: "\(error)")
        }
        for photo in file.photos {
            for face in photo.faces where face.box.count != 4 || face.box[2] <= 0 || face.box[3] <= 0 {
                throw FaceAnalysisError(.unreadableSample, "\(photo.file): face box \(face.box) is not [x, y, width, height]", path: path)
            }
        }
        self.directory = directory
        self.photos = file.photos
    }

    /// The path of `photo`.
    public func path(of photo: Photo) -> String { directory + "/" + photo.file }
}

/// How found boxes compare with labelled ones, at intersection over union 0.5.
public struct DetectionScore: Codable, Sendable, Equatable {
    /// Labelled (not hard) faces a box matched.
    public var truePositives = 0
    /// Boxes that matched no labelled face (boxes on hard faces are not counted).
    public var falsePositives = 0
    /// Labelled (not hard) faces no box matched.
    public var falseNegatives = 0
    /// Small labelled faces (narrower than 40 px or 5% of the photo's short side) and how many were found.
    public var smallFaces = 0
    public var smallFacesFound = 0
    /// Boxes on photos labelled as having no people.
    public var falseFacesWithoutPeople = 0
    /// Of those, boxes on photos of animals or paintings (the faces a person would not call faces).
    public var falseFacesOnAnimalsAndPaintings = 0
    /// Photos whose label (faces or not) the boxes got right, of all photos scored.
    public var photosRight = 0
    public var photos = 0

    public init() {}

    public var precision: Double { Double(truePositives) / Double(max(1, truePositives + falsePositives)) }
    public var recall: Double { Double(truePositives) / Double(max(1, truePositives + falseNegatives)) }
    public var smallFaceRecall: Double { Double(smallFacesFound) / Double(max(1, smallFaces)) }
    public var photoAccuracy: Double { Double(photosRight) / Double(max(1, photos)) }

    /// Adds one photo: `boxes` (x, y, width, height, in photo pixels) are the faces claimed, strongest first.
    public mutating func add(_ photo: LabelledPhotos.Photo, boxes: [(x: Double, y: Double, width: Double, height: Double)]) {
        let matches = Self.match(boxes, to: photo.faces)
        for (index, face) in photo.faces.enumerated() where !face.hard {
            let small = face.box[2] < 40 || Double(face.box[2]) < 0.05 * Double(min(photo.width, photo.height))
            let found = matches.matchedFaces.contains(index)
            if found { truePositives += 1 } else { falseNegatives += 1 }
            if small {
                smallFaces += 1
                if found { smallFacesFound += 1 }
            }
        }
        falsePositives += matches.unmatchedBoxes
        if photo.kind == "no-people" {
            falseFacesWithoutPeople += boxes.count
            if photo.subject == "animal" || photo.subject == "painting" { falseFacesOnAnimalsAndPaintings += boxes.count }
        }
        photos += 1
        if photo.hasFaces == !boxes.isEmpty { photosRight += 1 }
    }

    /// Greedy matching, strongest box first, each face at most once, IoU at least 0.5. A box
    /// matching a hard face, or overlapping one by IoU 0.3, is neither right nor wrong.
    public static func match(_ boxes: [(x: Double, y: Double, width: Double, height: Double)],
                             to faces: [LabelledPhotos.Face]) -> (matchedFaces: Set<Int>, unmatchedBoxes: Int, boxLabels: [Bool?]) {
        var taken = Set<Int>()
        var unmatched = 0
        var labels: [Bool?] = []
        for box in boxes {
            var best = 0.0, bestIndex = -1
            for (index, face) in faces.enumerated() where !taken.contains(index) {
                let overlap = iou(box, face.box)
                if overlap > best { best = overlap; bestIndex = index }
            }
            if best >= 0.5 {
                taken.insert(bestIndex)
                labels.append(faces[bestIndex].hard ? nil : true)
            } else if faces.contains(where: { $0.hard && iou(box, $0.box) >= 0.3 }) {
                labels.append(nil)
            } else {
                unmatched += 1
                labels.append(false)
            }
        }
        return (taken, unmatched, labels)
    }

    static func iou(_ a: (x: Double, y: Double, width: Double, height: Double), _ b: [Int]) -> Double {
        let bx = Double(b[0]), by = Double(b[1]), bw = Double(b[2]), bh = Double(b[3])
        let ix = max(0, min(a.x + a.width, bx + bw) - max(a.x, bx))
        let iy = max(0, min(a.y + a.height, by + bh) - max(a.y, by))
        let intersection = ix * iy
        let union = a.width * a.height + bw * bh - intersection
        return union > 0 ? intersection / union : 0
    }
}
