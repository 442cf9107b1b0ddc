"""The export wing: an int8 NHWC graph as a `.tflite` file (LiteRT's flatbuffer schema)."""
