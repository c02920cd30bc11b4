"""PII redaction measured on the labelled zh/en set in tests/test_pii.py (IDs, bank cards,
phones, emails, and decoys such as order numbers and dates): ``python -m bench.pii``."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from memory_core.text.pii import redact
from tests.test_pii import LABELLED


RESULTS = Path(__file__).resolve().parent / "results" / "pii.json"


def main() -> None:
    tp, fp, fn = Counter(), Counter(), Counter()
    decoy_messages = sum(1 for _, expected in LABELLED if not expected)
    decoys_touched = 0
    for text, expected in LABELLED:
        found = Counter((f.kind, text[f.start:f.end]) for f in redact(text).findings)
        wanted = Counter(expected)
        for key in found | wanted:
            hit = min(found[key], wanted[key])
            tp[key[0]] += hit
            fp[key[0]] += found[key] - hit
            fn[key[0]] += wanted[key] - hit
        if not expected and found:
            decoys_touched += 1
    print(f"\n{len(LABELLED)} labelled messages ({decoy_messages} decoy-only)\n")
    print("| kind | true pos | false pos | missed | precision | recall |")
    print("|---|---|---|---|---|---|")
    kinds = {}
    for kind in sorted(set(tp) | set(fp) | set(fn)):
        p = tp[kind] / (tp[kind] + fp[kind]) if tp[kind] + fp[kind] else 1.0
        r = tp[kind] / (tp[kind] + fn[kind]) if tp[kind] + fn[kind] else 1.0
        print(f"| {kind} | {tp[kind]} | {fp[kind]} | {fn[kind]} | {p:.3f} | {r:.3f} |")
        kinds[kind] = {"true_pos": tp[kind], "false_pos": fp[kind], "missed": fn[kind],
                       "precision": round(p, 4), "recall": round(r, 4)}
    print(f"\ndecoy-only messages with any redaction: {decoys_touched} of {decoy_messages}")
    RESULTS.write_text(json.dumps({"messages": len(LABELLED), "decoy_messages": decoy_messages,
                                   "decoys_touched": decoys_touched, "kinds": kinds}, indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
