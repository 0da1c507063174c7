#!/usr/bin/env python3
"""Turn a BPF object into C source: embed.py OBJECT OUT.c SYMBOL

Emits `const unsigned char SYMBOL[]` and `const unsigned long SYMBOL_len`, so that the
library carries its XDP program and needs no file at run time.
"""
import sys


def main():
    obj, out, sym = sys.argv[1:4]
    with open(obj, "rb") as f:
        data = f.read()
    lines = []
    for i in range(0, len(data), 12):
        lines.append("\t" + " ".join("0x%02x," % b for b in data[i:i + 12]))
    with open(out, "w") as f:
        f.write("/* Generated from %s by embed.py; do not edit. */\n" % obj.split("/")[-1])
        f.write("extern const unsigned char %s[];\n" % sym)
        f.write("extern const unsigned long %s_len;\n" % sym)
        f.write("__attribute__((aligned(8))) const unsigned char %s[] = {\n" % sym)
        f.write("\n".join(lines) + "\n};\n")
        f.write("const unsigned long %s_len = %d;\n" % (sym, len(data)))


if __name__ == "__main__":
    main()
