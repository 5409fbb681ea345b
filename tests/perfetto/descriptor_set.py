#!/usr/bin/env python3
"""Writes Perfetto's published trace schema as a protobuf FileDescriptorSet, for
`protoc --descriptor_set_in=OUT --decode=perfetto.protos.Trace
protos/perfetto/trace/perfetto_trace.proto` (tests/trace_perfetto.rs).

The schema comes from PyPI's `perfetto` package (`pip install --no-deps perfetto`), which ships
`perfetto_trace.proto` compiled by protoc into `perfetto_trace_pb2.py`: its one
`AddSerializedFile(b'...')` argument is the serialized FileDescriptorProto of
`protos/perfetto/trace/perfetto_trace.proto`. It is read with `ast` (the module is not imported,
so no protobuf runtime is needed), and wrapped as field 1 of a FileDescriptorSet.

Usage: descriptor_set.py OUT   (exit 3: the perfetto package is not installed)
"""
import ast
import importlib.util
import os
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def main():
    spec = importlib.util.find_spec("perfetto")
    if spec is None or not spec.submodule_search_locations:
        print("python package `perfetto` not found", file=sys.stderr)
        return 3
    for root in spec.submodule_search_locations:
        path = os.path.join(root, "protos", "perfetto", "trace", "perfetto_trace_pb2.py")
        if os.path.exists(path):
            break
    else:
        print("perfetto package has no perfetto_trace_pb2.py", file=sys.stderr)
        return 3
    tree = ast.parse(open(path, encoding="utf-8").read())
    files = [
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", None) == "AddSerializedFile"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, bytes)
    ]
    if len(files) != 1:
        print(f"{path}: expected one AddSerializedFile, found {len(files)}", file=sys.stderr)
        return 1
    fd = files[0]
    with open(sys.argv[1], "wb") as out:
        out.write(b"\x0a" + varint(len(fd)) + fd)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
