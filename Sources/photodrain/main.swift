import PhotoDecoding
print("x")
