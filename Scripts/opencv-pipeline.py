#!/usr/bin/python3
"""The peer of `photodrain analyze` for Scripts/bench-pipeline: decode each JPEG to gray at 1/4
with OpenCV (IMREAD_REDUCED_GRAYSCALE_4, libjpeg-turbo's DCT scaling) and run the same cascade
with the same parameters, one thread per process. `--reduce 2` decodes at 1/2 instead (with
minSize 20, the cascade then looks for the same 40 px faces as PhotoDrain's default).

    opencv-pipeline.py [--reduce 2|4|8] CASCADE MIN_SIZE FILE...   -> prints "<files> <seconds> <faces>"
"""
import sys
import time

import cv2


def main():
    args = sys.argv[1:]
    reduce = 4
    if args[:1] == ["--reduce"]:
        reduce, args = int(args[1]), args[2:]
    flag = {2: cv2.IMREAD_REDUCED_GRAYSCALE_2, 4: cv2.IMREAD_REDUCED_GRAYSCALE_4, 8: cv2.IMREAD_REDUCED_GRAYSCALE_8}.get(reduce)
    if flag is None:
        sys.exit(f"--reduce {reduce}: 2, 4 or 8")
    cascade_path, min_size, files = args[0], int(args[1]), args[2:]
    cv2.setNumThreads(1)
    cascade = cv2.CascadeClassifier(cascade_path)
    if cascade.empty():
        sys.exit(f"cannot load {cascade_path}")
    start = time.perf_counter()
    faces = 0
    for path in files:
        gray = cv2.imread(path, flag)
        if gray is None:
            continue
        found = cascade.detectMultiScale(gray, scaleFactor=1.1, minNeighbors=3, minSize=(min_size, min_size))
        faces += len(found)
    print(len(files), time.perf_counter() - start, faces)


if __name__ == "__main__":
    main()
