"""Datasets in real object stores on 127.0.0.1 (moto's S3 server with s3fs, a GCS emulator with
gcsfs): written with ``write_dataset``, read with ``read_dataset``, the ``Dataset`` (fetching the
next shard ahead, with DataLoader workers) and the CLI (configured by the environment or by
``--storage-option``); an upload that fails midway and a writer killed midway, on both stores."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import textwrap
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen.errors import TfrGenError
from codegen.runtime.io import prefetch
from codegen.runtime.io.reader import read_tfrecord
from codegen.runtime.io.writer import write_tfrecord
from support.cli import tfr_gen
from support.modules import generated_module
from support.paths import GENERATED, SCHEMAS
from support.processes import PYTHON

Digit = generated_module("mnist").Digit


@pytest.fixture(params=["s3", "gcs"])
def store(request: pytest.FixtureRequest) -> Any:
    """Each object store (a ``support.servers.ObjectStore``)."""
    return request.getfixturevalue(request.param)


def digits(count: int) -> list[Any]:
    return [Digit(label=i, image=np.full(784, i % 256, dtype=np.int64)) for i in range(count)]


def shard_names(store: Any, url: str) -> list[str]:
    """The names of the shards of the dataset at ``url``."""
    found = store.fs.glob(f"{url.split('://', 1)[1]}/*.tfrecord*")
    return sorted(path.rsplit("/", 1)[1] for path in found)


def read_ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("tfr-gen read-ahead")]


def test_a_sharded_dataset_in_a_bucket_reads_as_it_was_written(store: Any) -> None:
    url = f"{store.new_bucket()}/digits"
    options = store.storage_options
    Digit.write_dataset(url, digits(60), shards=4, storage_options=options)
    assert len(shard_names(store, url)) == 4
    assert [d.label for d in Digit.read_dataset(url, storage_options=options)] == list(range(60))
    manifest = Digit.dataset_manifest(url, storage_options=options)
    assert sum(shard.records for shard in manifest.shards) == 60
    dataset = Digit.dataset(url, batch_size=None, storage_options=options)
    assert [d.label for d in dataset] == list(range(60))
    assert not read_ahead_threads()


@pytest.mark.parametrize("interleave", [1, 3])
def test_the_dataset_of_a_bucket_gives_the_records_of_local_files_in_the_same_order(
    s3: Any, tmp_path: Path, interleave: int
) -> None:
    url = f"{s3.new_bucket()}/digits"
    options = s3.storage_options
    Digit.write_dataset(url, digits(90), shards=5, storage_options=options)
    Digit.write_dataset(tmp_path / "digits", digits(90), shards=5)
    how = {"shuffle_buffer": 16, "seed": 7, "interleave": interleave, "epochs": 2}
    remote = Digit.dataset(url, batch_size=8, storage_options=options, **how)
    local = Digit.dataset(tmp_path / "digits", batch_size=8, **how)
    got = [batch.label.tolist() for batch in remote]
    assert got == [batch.label.tolist() for batch in local]
    assert sorted(sum(got, [])) == sorted(list(range(90)) * 2)
    assert not read_ahead_threads()


def test_stopping_early_stops_the_read_ahead(s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prefetch, "PART_SIZE", 1024)  # shards of many parts: threads that wait
    url = f"{s3.new_bucket()}/digits"
    options = s3.storage_options
    Digit.write_dataset(url, digits(1200), shards=2, compression=None, storage_options=options)
    records = iter(Digit.dataset(url, batch_size=None, storage_options=s3.storage_options))
    assert next(records).label == 0  # the dataset decodes 256 records at a time, of 600 a shard
    assert len(read_ahead_threads()) == 2  # this shard's and the next one's, started already
    records.close()
    assert not read_ahead_threads()


def test_an_epoch_asks_one_request_per_shard(s3: Any, s3_calls: collections.Counter[str]) -> None:
    url = f"{s3.new_bucket()}/digits"
    options = s3.storage_options
    Digit.write_dataset(url, digits(100), shards=4, storage_options=options)
    s3_calls.clear()
    dataset = Digit.dataset(url, batch_size=16, storage_options=options)
    assert s3_calls == {"list_objects_v2": 2, "get_object": 1}  # the listing, the manifest
    for _ in range(2):
        s3_calls.clear()
        assert sum(len(batch) for batch in dataset) == 100
        assert s3_calls == {"get_object": 4}  # each shard whole, its size from the listing
    files = [f"s3://{name}" for name in sorted(s3.fs.glob(f"{url[5:]}/*.tfrecord*"))]
    dataset = Digit.dataset(files, batch_size=16, storage_options=options)
    s3_calls.clear()
    assert sum(len(batch) for batch in dataset) == 100
    assert s3_calls == {"get_object": 4}


def test_a_resumed_dataset_of_a_bucket_yields_what_was_left_exactly_once(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prefetch, "PART_SIZE", 4096)  # shards of many parts, fetched in chains
    url = f"{s3.new_bucket()}/digits"
    options = s3.storage_options
    Digit.write_dataset(url, digits(300), shards=3, compression=None, storage_options=options)
    how = {"batch_size": 16, "shuffle_buffer": 32, "seed": 3, "storage_options": options}
    whole = [batch.label.tolist() for batch in Digit.dataset(url, **how)]
    first = Digit.dataset(url, **how)
    batches = iter(first)
    taken = [next(batches).label.tolist() for _ in range(7)]
    state = first.state_dict()
    batches.close()
    assert not read_ahead_threads()
    resumed = Digit.dataset(url, **how)
    resumed.load_state_dict(state)
    rest = [batch.label.tolist() for batch in resumed]
    assert taken + rest == whole
    assert sorted(sum(taken + rest, [])) == list(range(300))


def test_a_replaced_shard_is_skipped_and_the_next_one_is_still_fetched(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prefetch, "PART_SIZE", 1024)  # the replaced shard's fetch waits, unread
    url = f"{s3.new_bucket()}/digits"
    options = s3.storage_options
    Digit.write_dataset(url, digits(40), shards=4, compression=None, storage_options=options)
    shards = sorted(s3.fs.glob(f"{url[5:]}/*.tfrecord*"))
    lost = {d.label for d in Digit.read_tfrecord(f"s3://{shards[1]}", storage_options=options)}
    s3.fs.pipe(shards[1], b"not the shard that was written" * 300)
    dataset = Digit.dataset(url, batch_size=None, on_error="skip", storage_options=options)
    labels = [d.label for d in dataset]
    assert len(lost) == 10 and labels == [i for i in range(40) if i not in lost]
    assert dataset.skipped.spans == 1
    assert not read_ahead_threads()


def test_an_error_while_reading_stops_the_read_ahead(s3: Any) -> None:
    url = f"{s3.new_bucket()}/digits"
    options = s3.storage_options
    Digit.write_dataset(url, digits(40), shards=4, storage_options=options)
    dataset = Digit.dataset(url, batch_size=None, storage_options=options)
    shards = sorted(s3.fs.glob(f"{url[5:]}/*.tfrecord*"))
    s3.fs.pipe(shards[1], b"not the shard that was written")
    with pytest.raises(TfrGenError, match="its manifest lists"):
        for _ in dataset:
            pass
    assert not read_ahead_threads()


def test_dataloader_workers_read_each_record_of_a_bucket_once(s3: Any) -> None:
    import torch  # a test dependency

    url = f"{s3.new_bucket()}/digits"
    options = s3.storage_options
    Digit.write_dataset(url, digits(50), shards=5, storage_options=options)
    dataset = Digit.dataset(url, batch_size=4, shuffle_buffer=8, storage_options=options)
    loader = torch.utils.data.DataLoader(dataset.to_torch(), batch_size=None, num_workers=2)
    assert sorted(int(x) for batch in loader for x in batch["label"]) == list(range(50))


def test_the_cli_reads_a_bucket_configured_by_the_environment(store: Any, tmp_path: Path) -> None:
    url = f"{store.new_bucket()}/digits"
    Digit.write_dataset(url, digits(12), shards=2, storage_options=store.storage_options)
    files = f"{url}/*.tfrecord*"
    env = store.environment
    cat = tfr_gen("cat", files, "--schema", str(SCHEMAS / "mnist.yaml"), cwd=tmp_path, env=env)
    assert cat.returncode == 0, cat.stderr
    lines = [json.loads(line) for line in cat.stdout.splitlines()]
    assert [line["value"]["label"] for line in lines] == list(range(12))
    assert {line["file"] for line in lines} == {f"{url}/{name}" for name in shard_names(store, url)}
    stats = tfr_gen("stats", files, "--format", "json", cwd=tmp_path, env=env)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["records"] == 12
    valid = tfr_gen("validate", str(SCHEMAS / "mnist.yaml"), files, cwd=tmp_path, env=env)
    assert valid.returncode == 0, valid.stderr
    assert "12 records" in valid.stdout + valid.stderr
    missing = tfr_gen(
        "validate", str(SCHEMAS / "mnist.yaml"), f"{url}/nothing-*", cwd=tmp_path, env=env
    )
    assert missing.returncode != 0
    assert f"{url}/nothing-*" in missing.stderr and "Traceback" not in missing.stderr


def test_the_cli_reaches_a_bucket_through_storage_options(store: Any, tmp_path: Path) -> None:
    options = dict(store.storage_options)
    if store.protocol == "s3":  # the endpoint as botocore's client takes it: a JSON object
        options["client_kwargs"] = {"endpoint_url": options.pop("endpoint_url")}
    items = [
        f"--storage-option={key}={value if isinstance(value, str) else json.dumps(value)}"
        for key, value in options.items()
    ]
    env = {key: value for key, value in store.environment.items() if "FSSPEC" not in key}
    schema = str(SCHEMAS / "mnist.yaml")
    url = f"{store.new_bucket()}/digits"
    Digit.write_tfrecord(tmp_path / "digits.tfrecord", digits(9))
    local = tmp_path / "digits.parquet"
    done = tfr_gen("convert", schema, "digits.tfrecord", str(local), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    done = tfr_gen(
        "convert", schema, str(local), f"{url}/", "--shards", "3", *items, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    read = Digit.read_dataset(url, storage_options=store.storage_options)
    assert [d.label for d in read] == list(range(9))
    done = tfr_gen("validate", schema, f"{url}/*.tfrecord*", *items, cwd=tmp_path, env=env)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout == "tfr-gen validate: Digit: 9 records in 3 files: no problems\n"
    done = tfr_gen("cat", f"{url}/*.tfrecord*", "--schema", schema, *items, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["value"]["label"] for line in done.stdout.splitlines()] == list(
        range(9)
    )


def test_an_upload_that_fails_midway_leaves_no_object_and_no_pending_upload(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import s3fs

    bucket = s3.new_bucket()
    url = f"{bucket}/big.tfrecord"
    parts: list[int] = []
    upload = s3fs.core.S3File._upload_chunk

    def failing(self: Any, final: bool = False) -> Any:
        parts.append(1)
        if len(parts) == 2:
            raise ConnectionResetError("the connection broke during the upload")
        return upload(self, final)

    monkeypatch.setattr(s3fs.core.S3File, "_upload_chunk", failing)
    records = [bytes([i]) * 1_000_000 for i in range(20)]  # 20 MB: four 5 MiB parts
    options = {**s3.storage_options, "default_block_size": 5 << 20}
    with pytest.raises(ConnectionResetError, match="broke during the upload"):
        write_tfrecord(url, records, compression=None, storage_options=options)
    assert len(parts) == 2
    s3.fs.invalidate_cache()
    assert not s3.fs.exists(url)
    pending = s3.fs.call_s3("list_multipart_uploads", Bucket=bucket[5:])
    assert not pending.get("Uploads")
    monkeypatch.undo()
    write_tfrecord(url, records, compression=None, storage_options=s3.storage_options)
    assert list(read_tfrecord(url, storage_options=s3.storage_options)) == records


def test_a_writer_killed_midway_leaves_no_shard_and_no_manifest_in_s3(s3: Any) -> None:
    url = f"{s3.new_bucket()}/digits"
    Digit.write_dataset(url, digits(4), storage_options=s3.storage_options)
    options = {**s3.storage_options, "default_block_size": 5 << 20}  # parts sent as it writes
    script = textwrap.dedent(
        f"""\
        import os, signal, sys
        import numpy as np
        sys.path.insert(0, {str(GENERATED)!r})
        from mnist import Digit

        def records():
            for i in range(20000):
                if i == 10000:  # about 12 MB written: two parts uploaded
                    os.kill(os.getpid(), signal.SIGKILL)
                yield Digit(label=i, image=np.full(784, i % 256, dtype=np.int64))

        Digit.write_dataset(
            {url!r}, records(), compression=None, overwrite=True, storage_options={options!r}
        )
        """
    )
    done = subprocess.run([*PYTHON, "-c", script], check=False, timeout=300)
    assert done.returncode == -signal.SIGKILL
    bucket = url[5:].split("/")[0]
    pending = s3.fs.call_s3("list_multipart_uploads", Bucket=bucket).get("Uploads", [])
    assert pending  # the shard's upload had started, and was never completed
    s3.fs.invalidate_cache()
    names = sorted(path.rsplit("/", 1)[1] for path in s3.fs.ls(url[5:]))
    shards = [name for name in names if ".tfrecord" in name]
    assert len(shards) == 1 and [n for n in names if n.endswith(".manifest.json")] == [
        "digit.manifest.json"
    ]
    assert [d.label for d in Digit.read_dataset(url, storage_options=s3.storage_options)] == [
        0,
        1,
        2,
        3,
    ]  # the previous dataset, untouched: no object of the killed write under a final name


def test_a_gcs_upload_that_fails_midway_leaves_no_object_and_no_manifest(
    gcs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gcsfs

    url = f"{gcs.new_bucket()}/digits"
    chunks: list[int] = []
    discarded: list[str] = []
    upload = gcsfs.core.GCSFile._upload_chunk

    def failing(self: Any, final: bool = False) -> Any:
        if self.buffer.getbuffer().nbytes >= gcsfs.core.GCS_MIN_BLOCK_SIZE:
            chunks.append(1)
            if len(chunks) == 3:
                raise ConnectionResetError("the connection broke during the upload")
        return upload(self, final)

    def discarding(self: Any) -> None:
        # The abort is recorded, not sent: the emulator answers the DELETE of a resumable upload
        # with 501 (not implemented), which gcsfs retries for half a minute.
        discarded.append(self.path)

    monkeypatch.setattr(gcsfs.core.GCSFile, "_upload_chunk", failing)
    monkeypatch.setattr(gcsfs.core.GCSFile, "discard", discarding)
    options = {**gcs.storage_options, "block_size": 1 << 20}  # a resumable chunk per MiB
    with pytest.raises(ConnectionResetError, match="broke during the upload"):
        Digit.write_dataset(url, digits(4000), compression=None, storage_options=options)
    assert len(chunks) == 3 and len(discarded) == 1 and ".tfrecord" in discarded[0]
    gcs.fs.invalidate_cache()
    assert gcs.fs.find(url[5:]) == []  # no shard, no manifest, no lock
    with pytest.raises(TfrGenError, match="cannot list the dataset directory: it holds no objects"):
        Digit.dataset_manifest(url, storage_options=gcs.storage_options)


def test_a_writer_killed_midway_leaves_no_shard_and_no_manifest_in_gcs(gcs: Any) -> None:
    url = f"{gcs.new_bucket()}/digits"
    # shards=1: names known up front, no rename (the emulator lacks GCS's move, which gcsfs
    # retries for half a minute before it copies)
    Digit.write_dataset(url, digits(4), shards=1, storage_options=gcs.storage_options)
    options = {**gcs.storage_options, "block_size": 1 << 20}  # chunks sent as it writes
    script = textwrap.dedent(
        f"""\
        import os, signal, sys
        import gcsfs
        import numpy as np
        sys.path.insert(0, {str(GENERATED)!r})
        from mnist import Digit

        upload = gcsfs.core.GCSFile._upload_chunk

        def counted(self, final=False):
            sent = upload(self, final)
            print("chunk", flush=True)  # the parent counts the chunks sent before the kill
            return sent

        gcsfs.core.GCSFile._upload_chunk = counted

        def records():
            for i in range(20000):
                if i == 3000:  # about 4 MB written: chunks uploaded, the upload not finalised
                    os.kill(os.getpid(), signal.SIGKILL)
                yield Digit(label=i, image=np.full(784, i % 256, dtype=np.int64))

        Digit.write_dataset(
            {url!r}, records(), compression=None, overwrite=True, storage_options={options!r}
        )
        """
    )
    done = subprocess.run(
        [*PYTHON, "-c", script], check=False, timeout=300, capture_output=True, text=True
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.count("chunk") >= 2  # the shard's upload had started
    gcs.fs.invalidate_cache()
    names = sorted(path.rsplit("/", 1)[1] for path in gcs.fs.ls(url[5:]))
    shards = [name for name in names if ".tfrecord" in name]
    manifests = [name for name in names if name.endswith(".manifest.json")]
    assert len(shards) == 1 and manifests == ["digit.manifest.json"]
    assert [d.label for d in Digit.read_dataset(url, storage_options=gcs.storage_options)] == [
        0,
        1,
        2,
        3,
    ]  # the previous dataset, untouched: no object of the killed write under a final name


def test_the_readme_reads_a_bucket_in_three_lines(s3: Any, tmp_path: Path) -> None:
    readme = (GENERATED.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Data in a bucket", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len([line for line in code.splitlines() if line.strip()]) == 3
    customer = generated_module("customer")
    bucket = s3.new_bucket()
    records = [
        customer.Customer(
            age=i,
            movie=[f"movie {i}"],
            movie_ratings=[],
            suggestion="s",
            suggestion_purchased=0.0,
            purchase_price=1.0,
        )
        for i in range(300)
    ]
    customer.Customer.write_dataset(
        f"{bucket}/customers", records, shards=2, storage_options=s3.storage_options
    )
    program = code.replace("mypkg.records.customer", "customer").replace("s3://my-bucket", bucket)
    script = (
        f"import sys\nsys.path.insert(0, {str(GENERATED)!r})\nseen = []\ntrain = seen.append\n"
        f"{program}\nprint([len(batch) for batch in seen])\n"
    )
    done = subprocess.run(
        [*PYTHON, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, **s3.environment},  # the store configured as the README says
    )
    assert (done.returncode, done.stdout) == (0, "[256, 44]\n"), done.stderr
