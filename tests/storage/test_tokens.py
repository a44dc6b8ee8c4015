"""storage/tokens.py: the token shard format (plain memmap-able .bin + uint64 .idx), its atomic writer, and the
readers training and evaluation use (random windows with an exact resume, sequential windows for eval)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.tokens import (
    IGNORE_INDEX,
    RandomWindowSampler,
    TokenShards,
    TokenShardWriter,
    check_vocab_fits,
    dtype_for_vocab,
    iter_documents,
    iter_sequential_windows,
    open_shard,
    read_document_ends,
    shard_dtype,
)


def write_shard(path, docs, dtype=np.uint16):
    with TokenShardWriter(path, dtype) as w:
        for d in docs:
            w.add_document(d)
    return path


def make_shards(folder, lengths, seed=0, dtype=np.uint16):
    """Shards of the given lengths; shard k's tokens are k*1000 + position % 1000 (so a window tells its origin)."""
    rng = np.random.default_rng(seed)
    paths = []
    for k, n in enumerate(lengths):
        tokens = (k * 1000 + np.arange(n) % 1000).astype(np.int64)
        cuts = np.sort(rng.choice(np.arange(1, n), size=min(3, n - 1), replace=False)) if n > 1 else []
        docs = np.split(tokens, cuts)
        paths.append(write_shard(folder / f"shard-{k:05d}.bin", docs, dtype))
    return paths


def test_dtype_is_uint16_up_to_65536_ids_then_uint32():
    assert dtype_for_vocab(16_384) == np.uint16
    assert dtype_for_vocab(65_536) == np.uint16  # ids 0..65535
    assert dtype_for_vocab(65_537) == np.uint32
    assert dtype_for_vocab(200_000) == np.uint32
    with pytest.raises(ValueError, match="70,000 ids does not fit uint16"):
        check_vocab_fits(70_000, "uint16")
    assert check_vocab_fits(70_000, np.uint32) == np.dtype("<u4")


def test_bin_is_raw_little_endian_and_loads_with_a_plain_np_memmap(tmp_path):
    docs = [[5, 6, 7, 0], [65_535, 0], [1, 2, 3, 4, 5, 0]]
    path = write_shard(tmp_path / "shard-00000.bin", docs)
    flat = [t for d in docs for t in d]
    assert path.read_bytes() == np.array(flat, dtype="<u2").tobytes()  # no header
    plain = np.memmap(path, dtype=np.uint16, mode="r")  # exactly what nanoGPT's train.py does
    assert plain.tolist() == flat
    assert read_document_ends(path).dtype == np.dtype("<u8")
    assert read_document_ends(path).tolist() == [4, 6, 12]
    assert [d.tolist() for d in iter_documents(path)] == docs


def test_uint32_shards_round_trip_and_the_dtype_is_recovered_from_the_files(tmp_path):
    docs = [[70_000, 1, 0], [123_456, 0]]
    path = write_shard(tmp_path / "shard-00000.bin", docs, np.uint32)
    assert path.stat().st_size == 5 * 4
    assert shard_dtype(path) == np.uint32
    assert np.memmap(path, dtype=np.uint32, mode="r").tolist() == [70_000, 1, 0, 123_456, 0]
    assert open_shard(path).tolist() == [70_000, 1, 0, 123_456, 0]


def test_an_id_that_does_not_fit_the_dtype_is_an_error_and_leaves_no_files(tmp_path):
    path = tmp_path / "shard-00000.bin"
    with pytest.raises(ValueError, match="token id 70000 does not fit uint16"):
        with TokenShardWriter(path, np.uint16) as w:
            w.add_document([1, 2, 0])
            w.add_document([70_000, 0])
    assert list(tmp_path.iterdir()) == []


def test_writer_publishes_both_files_only_on_close(tmp_path):
    path = tmp_path / "train" / "shard-00003.bin"
    w = TokenShardWriter(path, np.uint16, buffer_tokens=4)
    w.add_documents(np.arange(10), [3, 7])
    assert not path.exists() and not path.with_suffix(".idx").exists()
    assert TokenShards(tmp_path, "train").paths == []  # a half-written shard is invisible to readers
    w.close()
    assert open_shard(path).tolist() == list(range(10))
    assert read_document_ends(path).tolist() == [3, 10]
    assert sorted(p.name for p in path.parent.iterdir()) == ["shard-00003.bin", "shard-00003.idx"]


def test_token_shards_lists_complete_shards_of_a_split(tmp_path):
    make_shards(tmp_path / "enc" / "train", [50, 60])
    make_shards(tmp_path / "enc" / "val", [30])
    (tmp_path / "enc" / "train" / "shard-00009.bin").write_bytes(b"\0\0")  # no .idx: incomplete
    train = TokenShards(tmp_path / "enc", "train")
    assert [p.name for p in train] == ["shard-00000.bin", "shard-00001.bin"]
    assert train.num_tokens == 110 and train.dtype == np.uint16
    assert TokenShards(tmp_path / "enc" / "val").num_tokens == 30
    assert TokenShards(tmp_path / "enc").paths == train.paths  # a dataset folder means its train split


def _window_origin(x_row):
    """Shard index and offset of a window drawn from make_shards' shards."""
    return int(x_row[0]) // 1000, int(x_row[0]) % 1000


def test_random_windows_are_real_shifted_windows_and_deterministic(tmp_path):
    paths = make_shards(tmp_path, [700, 300, 5])  # the 5-token shard is shorter than a window
    a = RandomWindowSampler(paths, block_size=16, batch_size=8, seed=1)
    b = RandomWindowSampler(paths, block_size=16, batch_size=8, seed=1)
    for _ in range(5):
        (xa, ya), (xb, yb) = a.next_batch(), b.next_batch()
        assert xa.dtype == np.int64 and xa.shape == (8, 16) and ya.shape == (8, 16)
        assert np.array_equal(xa, xb) and np.array_equal(ya, yb)
        assert np.array_equal(xa[:, 1:], ya[:, :-1])
        for row_x, row_y in zip(xa, ya, strict=True):
            k, off = _window_origin(row_x)
            assert k in (0, 1)  # never the too-short shard
            shard = open_shard(paths[k])
            assert row_x.tolist() == shard[off : off + 16].tolist()
            assert row_y.tolist() == shard[off + 1 : off + 17].tolist()
    c = RandomWindowSampler(paths, block_size=16, batch_size=8, seed=2)
    assert not np.array_equal(c.next_batch()[0], RandomWindowSampler(paths, 16, 8, seed=1).next_batch()[0])


def test_windows_are_drawn_across_shards_in_proportion_to_their_length(tmp_path):
    paths = make_shards(tmp_path, [9_000 + 8, 1_000 + 8], dtype=np.uint32)
    sampler = RandomWindowSampler(paths, block_size=8, batch_size=500, seed=0)
    origins = np.concatenate([sampler.next_batch()[0][:, 0] // 1000 for _ in range(10)])
    share = float(np.mean(origins == 0))
    assert 0.87 < share < 0.93  # 9,000 of 10,000 starts lie in the first shard


def test_resume_from_state_dict_continues_the_exact_stream(tmp_path):
    paths = make_shards(tmp_path, [500, 400])
    run = RandomWindowSampler(paths, block_size=32, batch_size=4, seed=7)
    for _ in range(5):
        run.next_batch()
    state = json.loads(json.dumps(run.state_dict()))  # it must survive a JSON checkpoint (state.json)
    expected = [run.next_batch() for _ in range(5)]

    resumed = RandomWindowSampler(paths, block_size=32, batch_size=4, seed=7)
    resumed.load_state_dict(state)
    for (x, y), (ex, ey) in zip((resumed.next_batch() for _ in range(5)), expected, strict=True):
        assert np.array_equal(x, ex) and np.array_equal(y, ey)
    assert state["batches"] == 5 and state["version"] == 1


def test_resume_is_refused_on_other_settings_or_other_shards(tmp_path):
    paths = make_shards(tmp_path, [500, 400])
    state = RandomWindowSampler(paths, block_size=32, batch_size=4, seed=7).state_dict()
    with pytest.raises(ValueError, match="seed"):
        RandomWindowSampler(paths, block_size=32, batch_size=4, seed=8).load_state_dict(state)
    with pytest.raises(ValueError, match="other token shards"):
        RandomWindowSampler(paths[:1], block_size=32, batch_size=4, seed=7).load_state_dict(state)


def test_ddp_ranks_draw_different_streams(tmp_path):
    paths = make_shards(tmp_path, [2_000])
    ranks = [RandomWindowSampler(paths, 16, 8, seed=3, rank=r, world_size=4) for r in range(4)]
    firsts = [tuple(s.next_batch()[0][:, 0].tolist()) for s in ranks]
    assert len(set(firsts)) == 4
    with pytest.raises(ValueError, match="rank 4 is outside world_size 4"):
        RandomWindowSampler(paths, 16, 8, seed=3, rank=4, world_size=4)


def test_sampler_explains_shards_shorter_than_a_window(tmp_path):
    paths = make_shards(tmp_path, [10, 20])
    with pytest.raises(ValueError, match="shorter than block_size"):
        RandomWindowSampler(paths, block_size=64, batch_size=2)


def _check_sequential(paths, block, batch):
    stream = np.concatenate([open_shard(p) for p in paths]).astype(np.int64)
    xs, ys = [], []
    batches = list(iter_sequential_windows(paths, block, batch))
    if stream.size < 2:
        assert batches == []  # a single token has nothing to predict
        return
    for x, y in batches:
        assert x.dtype == np.int64 and x.shape[1] == block and 1 <= x.shape[0] <= batch
        xs.append(x.reshape(-1))
        ys.append(y.reshape(-1))
    assert all(b[0].shape[0] == batch for b in batches[:-1])
    x, y = np.concatenate(xs), np.concatenate(ys)
    real = y != IGNORE_INDEX
    assert np.array_equal(y[real], stream[1:])  # every target exactly once, in order
    assert np.array_equal(x[real], stream[:-1])  # every input that has a target exactly once
    assert real.tolist() == sorted(real.tolist(), reverse=True)  # padding only at the very end


def test_sequential_windows_cover_every_token_once_across_shard_boundaries(tmp_path):
    paths = make_shards(tmp_path, [100, 7, 3, 64, 1, 65])
    for block, batch in [(16, 3), (1, 10), (64, 1), (7, 2), (300, 4)]:
        _check_sequential(paths, block, batch)


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 60), min_size=1, max_size=5),
    block=st.integers(1, 40),
    batch=st.integers(1, 5),
)
def test_sequential_windows_property(tmp_path_factory, lengths, block, batch):
    folder = tmp_path_factory.mktemp("seq")
    _check_sequential(make_shards(folder, lengths), block, batch)


def test_sampler_stream_does_not_depend_on_how_many_shards_stay_open(tmp_path, monkeypatch):
    import storage.tokens as tokens

    paths = make_shards(tmp_path, [300, 200, 400, 100])
    wide = RandomWindowSampler(paths, 8, 16, seed=5)
    expected = [wide.next_batch()[0] for _ in range(4)]
    monkeypatch.setattr(tokens, "OPEN_SHARDS", 1)
    narrow = RandomWindowSampler(paths, 8, 16, seed=5)
    assert all(np.array_equal(narrow.next_batch()[0], e) for e in expected)
    assert len(narrow._maps) == 1
