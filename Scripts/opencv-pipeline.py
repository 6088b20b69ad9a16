#!/usr/bin/python3
"""The peer of `photodrain analyze` for Scripts/bench-pipeline: decode each JPEG to gray with
OpenCV (IMREAD_REDUCED_GRAYSCALE_N, libjpeg-turbo's DCT scaling) and run the same cascade with the
same parameters, one thread per process.

    opencv-pipeline.py [--min-face PX] CASCADE FILE...   -> prints "<files> <seconds> <faces>"

--min-face (photo pixels, default 96) is the smallest face to find. OpenCV's cascade cannot look
for a face smaller than its window (24 px for the frontal face cascades; a smaller `minSize` has no
effect), so the photo is analysed at window / min-face of its size: decoded at the DCT reduction
nearest that scale (1/1, 1/2, 1/4, 1/8), then resized to it exactly (cv2.INTER_AREA down,
cv2.INTER_LINEAR up). 96 px in a 12 MP photo is a 1/4 decode and nothing else; 40 px is a 1/2
decode enlarged 1.2 times.
"""
import sys
import time

import cv2

REDUCTIONS = {1: cv2.IMREAD_GRAYSCALE, 2: cv2.IMREAD_REDUCED_GRAYSCALE_2,
              4: cv2.IMREAD_REDUCED_GRAYSCALE_4, 8: cv2.IMREAD_REDUCED_GRAYSCALE_8}


def load_window(cascade_path):
    """The cascade's window (width, height) from its XML: <width> and <height>, or the old <size>."""
    storage = cv2.FileStorage(cascade_path, cv2.FILE_STORAGE_READ)
    root = storage.getFirstTopLevelNode()
    width, height = root.getNode("width"), root.getNode("height")
    if not width.empty() and not height.empty():
        return int(width.real()), int(height.real())
    size = root.getNode("size")
    if not size.empty():
        return int(size.at(0).real()), int(size.at(1).real())
    sys.exit(f"{cascade_path}: no window size")


def main():
    args = sys.argv[1:]
    min_face = 96
    if args[:1] == ["--min-face"]:
        try:
            min_face = int(args[1])
        except (IndexError, ValueError):
            sys.exit("--min-face needs a whole number of pixels")
        args = args[2:]
    if len(args) < 1 or min_face < 1:
        sys.exit(__doc__)
    cascade_path, files = args[0], args[1:]
    cv2.setNumThreads(1)
    cascade = cv2.CascadeClassifier(cascade_path)
    if cascade.empty():
        sys.exit(f"cannot load {cascade_path}")
    window = load_window(cascade_path)
    scale = min(window) / min_face
    if scale > 1:
        print(f"opencv-pipeline: faces under the {min(window)} px window need an enlarged photo; "
              f"searching the full-size photo for faces of {min(window)} px and more", file=sys.stderr)
        scale = 1.0
    reduction = min(REDUCTIONS, key=lambda r: abs(1 / r - scale))
    start = time.perf_counter()
    faces = 0
    for path in files:
        gray = cv2.imread(path, REDUCTIONS[reduction])
        if gray is None:
            continue
        factor = scale * reduction
        if abs(factor - 1) > 1e-6:
            h, w = gray.shape
            size = (max(1, round(w * factor)), max(1, round(h * factor)))
            gray = cv2.resize(gray, size, interpolation=cv2.INTER_AREA if factor < 1 else cv2.INTER_LINEAR)
        found = cascade.detectMultiScale(gray, scaleFactor=1.1, minNeighbors=3, minSize=window)
        faces += len(found)
    print(len(files), time.perf_counter() - start, faces)


if __name__ == "__main__":
    main()
