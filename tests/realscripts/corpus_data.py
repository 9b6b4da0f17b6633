"""Tiny local inputs for the corpus scripts, written into the script's run directory before each run
(no downloads: every file a script would fetch is made here, at the path the script looks for it).

Each function takes the directory the script runs in. Everything is generated from a fixed seed,
so the bare and the probed run read the same bytes.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

WORDS = [f"w{i}" for i in range(300)]


def _text(n_words: int, seed: int = 0, per_line: int = 12) -> str:
    rng = random.Random(seed)
    # a Zipf-like draw so the language models have something to learn
    weights = [1.0 / (i + 1) for i in range(len(WORDS))]
    words = rng.choices(WORDS, weights=weights, k=n_words)
    lines = [" ".join(words[i : i + per_line]) for i in range(0, n_words, per_line)]
    return "\n".join(lines) + "\n"


def wikitext2(cwd: Path, blocks: int = 4160) -> None:
    """`lightning.pytorch.demos.WikiText2(data_dir="data")` reads data/wikitext-2.txt and
    downloads it only when missing. The Lightning examples split off 4,000 samples (35 tokens each)
    for val and test, so `blocks` = 4,000 + the training samples."""
    path = cwd / "data" / "wikitext-2.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    # WikiText2 counts one <eos> per line: 12 words + 1 per line
    path.write_text(_text(blocks * 35 * 12 // 13 + 600))


def nanogpt(cwd: Path, tokens: int = 40_000, vocab: int = 65) -> None:
    """nanoGPT's get_batch memory-maps data/<dataset>/{train,val}.bin (uint16) and reads the
    vocabulary size from meta.pkl when it exists (prepare.py writes it)."""
    import pickle

    import numpy as np

    d = cwd / "data" / "shakespeare_char"
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    # a repeating pattern plus noise: learnable, so the loss falls
    base = np.tile(np.arange(vocab, dtype=np.uint16), tokens // vocab + 1)[:tokens]
    noise = rng.integers(0, vocab, tokens, dtype=np.uint16)
    data = np.where(rng.random(tokens) < 0.2, noise, base).astype(np.uint16)
    data.tofile(d / "train.bin")
    data[: tokens // 10].tofile(d / "val.bin")
    with (d / "meta.pkl").open("wb") as fh:
        pickle.dump({"vocab_size": vocab, "itos": {}, "stoi": {}}, fh)


def image_folder(cwd: Path, classes: int = 4, per_class: int = 16, size: int = 32) -> None:
    """An ImageFolder tree (data/train/<class>/*.png, data/validation/...) for timm's train.py."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for split, n in (("train", per_class), ("validation", per_class // 4)):
        for c in range(classes):
            d = cwd / "data" / split / f"class{c}"
            d.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                pixels = rng.integers(0, 255, (size, size, 3), dtype=np.uint8)
                pixels[..., c % 3] = 40 * c  # one channel set by the class: learnable
                Image.fromarray(pixels).save(d / f"{i}.png")


def hf_text(cwd: Path, n_words: int = 30_000) -> None:
    """A local text file and a tiny byte-level BPE tokenizer (no hub access): the HF examples take
    `--train_file`, `--tokenizer_name DIR`, and a GPT-2 built from a config."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    text = _text(n_words, seed=1)
    (cwd / "train.txt").write_text(text)
    (cwd / "validation.txt").write_text(_text(n_words // 10, seed=2))
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"])
    tok.train_from_iterator(text.splitlines(), trainer)
    d = cwd / "tokenizer"
    d.mkdir(exist_ok=True)
    tok.save(str(d / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>",
        "model_max_length": 64,
    }
    (d / "tokenizer_config.json").write_text(json.dumps(config))


def gpt2_config(cwd: Path) -> None:
    """A tiny GPT-2 config directory for `--config_name` (the no_trainer example has no
    `--config_overrides`)."""
    d = cwd / "gpt2cfg"
    d.mkdir(exist_ok=True)
    config = {
        "model_type": "gpt2",
        "architectures": ["GPT2LMHeadModel"],
        "n_layer": 2,
        "n_head": 2,
        "n_embd": 32,
        "n_positions": 64,
        "vocab_size": 400,
        "bos_token_id": 0,
        "eos_token_id": 0,
    }
    (d / "config.json").write_text(json.dumps(config))


def hf_text_and_config(cwd: Path) -> None:
    hf_text(cwd)
    gpt2_config(cwd)
