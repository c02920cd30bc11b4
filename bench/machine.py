"""What a benchmark figure depends on besides the code: the CPU and its int8 instructions.

Why: the default encoder is int8 (ONNX Runtime dynamic quantisation), and ONNX Runtime picks its
int8 kernels by instruction set (AVX2 alone, AVX-VNNI, AVX-512 VNNI, AMX). The same pinned
packages gave MADial zh full recall@5 .584 on one machine and .566 on an AVX2-only AMD EPYC
(docs/benchmarks.md, twelfth session), so each result file records the machine it came from.
"""
from __future__ import annotations

import os
import platform
from pathlib import Path

# The instruction sets ONNX Runtime's int8 kernels choose between (Linux /proc/cpuinfo names).
INT8_FEATURES = ("avx2", "avx_vnni", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8")


def cpu_description(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, object]:
    """``{"model", "cpus", "int8_features"}``: the CPU model name, the logical CPU count, and which
    of ``INT8_FEATURES`` it has (empty where /proc/cpuinfo cannot be read)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                model = value.strip()
            elif key.strip() == "flags":
                flags |= set(value.split())
    except OSError:
        pass
    return {"model": model, "cpus": os.cpu_count(), "int8_features": [f for f in INT8_FEATURES if f in flags]}
