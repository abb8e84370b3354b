"""Model intake without TensorFlow: hostile archives, not-a-model, missing variables,
producer versions, and reading saved_model.pb's wire format."""
import io
import json
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from converters.model import intake
from converters.model.errors import (MissingVariables, NotAModel, ProducerTooNew,
                                     UnsafeArchive)
from converters.model.savedmodel_pb import parse_saved_model, serving_meta


# -- a real saved_model.pb, written field by field (protobuf wire format) ----------------------
def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def f(num: int, payload: bytes | str | int) -> bytes:
    if isinstance(payload, int):
        return varint(num << 3) + varint(payload)
    payload = payload.encode() if isinstance(payload, str) else payload
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def tensor_info(name: str, dtype: int, dims: list[int]) -> bytes:
    shape = b"".join(f(2, f(1, d if d >= 0 else d + (1 << 64))) for d in dims)
    return f(1, name) + f(2, dtype) + f(3, shape)


def saved_model_pb(version="2.15.1", ops=("MatMul", "VarHandleOp"), tags=("serve",)) -> bytes:
    op_list = b"".join(f(1, f(1, op)) for op in ops)
    info = f(2, op_list) + b"".join(f(4, t) for t in tags) + f(5, version) + f(6, "v" + version)
    sig = (f(1, f(1, "x") + f(2, tensor_info("serving_default_x:0", 1, [-1, 4])))
           + f(2, f(1, "y") + f(2, tensor_info("StatefulPartitionedCall:0", 1, [-1, 2])))
           + f(3, "tensorflow/serving/predict"))
    meta = f(1, info) + f(5, f(1, "serving_default") + f(2, sig))
    return f(1, 1) + f(2, meta)


def write_saved_model(folder: Path, version="2.15.1", variables=True, ops=("MatMul", "VarHandleOp")):
    folder.mkdir(parents=True)
    (folder / "saved_model.pb").write_bytes(saved_model_pb(version, ops))
    if variables:
        (folder / "variables").mkdir()
        (folder / "variables" / "variables.index").write_bytes(b"index")
        (folder / "variables" / "variables.data-00000-of-00001").write_bytes(b"\0" * 64)
    return folder


# -- the wire-format reader ----------------------------------------------------------------------
def test_reads_version_tags_ops_and_signature(tmp_path):
    folder = write_saved_model(tmp_path / "m")
    meta = serving_meta(parse_saved_model(folder))
    assert meta.tensorflow_version == "2.15.1" and meta.tags == ["serve"]
    assert meta.ops == {"MatMul", "VarHandleOp"}
    sig = meta.signatures["serving_default"].to_dict()
    assert sig["inputs"] == [{"name": "x", "tensor": "serving_default_x:0", "dtype": "float32",
                              "shape": [None, 4], "dynamic_dims": [0]}]
    assert sig["outputs"][0]["name"] == "y"


def test_garbage_pb_is_not_a_model(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "saved_model.pb").write_bytes(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")
    with pytest.raises(NotAModel, match="not a valid SavedModel"):
        intake.identify(tmp_path / "m")


# -- identification and the checks that need no TensorFlow ---------------------------------------
def test_folder_model_identified(tmp_path):
    src = intake.identify(write_saved_model(tmp_path / "m"), runner_tf="2.15.1")
    assert src.kind == "saved_model" and src.producer == "2.15.1"
    assert "serving_default" in src.info["signatures"]


def test_nested_saved_model_found_in_archive(tmp_path):
    write_saved_model(tmp_path / "export" / "1")
    arch = tmp_path / "m.tar.gz"
    with tarfile.open(arch, "w:gz") as tf:
        tf.add(tmp_path / "export", arcname="export")
    src = intake.intake(arch, tmp_path / "work", runner_tf="2.15.1")
    assert src.path == (tmp_path / "work" / "source" / "export" / "1").resolve() or \
        src.path.name == "1"


def test_producer_newer_than_runner(tmp_path):
    folder = write_saved_model(tmp_path / "m", version="2.18.0")
    with pytest.raises(ProducerTooNew) as e:
        intake.identify(folder, runner_tf="2.15.1")
    assert "2.18.0" in str(e.value) and "2.15.1" in str(e.value) and ">= 2.18" in str(e.value)
    # patch releases of the same minor are fine, older producers too
    intake.check_producer("2.15.9", "2.15.1")
    intake.check_producer("2.12.0", "2.15.1")


def test_missing_variables(tmp_path):
    with pytest.raises(MissingVariables, match="variables.index is missing"):
        intake.identify(write_saved_model(tmp_path / "m", variables=False))
    # a graph without variables needs no variables/ folder
    intake.identify(write_saved_model(tmp_path / "c", variables=False, ops=("MatMul",)))


def test_missing_weight_shard(tmp_path):
    folder = write_saved_model(tmp_path / "m")
    (folder / "variables" / "variables.data-00000-of-00001").rename(
        folder / "variables" / "variables.data-00000-of-00002")
    with pytest.raises(MissingVariables, match="1 of 2 weight shards"):
        intake.identify(folder)


def test_not_a_model(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(NotAModel, match="not a model"):
        intake.identify(tmp_path / "notes.txt")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "readme.md").write_text("x")
    with pytest.raises(NotAModel, match="no saved_model.pb"):
        intake.identify(tmp_path / "d")
    arch = tmp_path / "photos.zip"
    with zipfile.ZipFile(arch, "w") as z:
        z.writestr("cat.jpg", b"\xff\xd8 not a model")
    with pytest.raises(NotAModel):
        intake.intake(arch, tmp_path / "w")


def test_keras_file_written_by_newer_keras(tmp_path):
    path = tmp_path / "m.keras"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("metadata.json", json.dumps({"keras_version": "3.3.3"}))
        z.writestr("config.json", "{}")
        z.writestr("model.weights.h5", b"")
    with pytest.raises(ProducerTooNew, match="Keras 3.3.3"):
        intake.identify(path, runner_keras="2.15.0")


def test_h5_recognised_by_magic(tmp_path):
    import h5py
    with h5py.File(tmp_path / "m.h5", "w") as f:
        f.attrs["model_config"] = json.dumps({"class_name": "Sequential", "config": {
            "layers": [{"class_name": "Dense", "config": {"name": "d", "units": 1}}]}})
    assert intake.identify(tmp_path / "m.h5").kind == "h5"
    (tmp_path / "bad.h5").write_bytes(intake.HDF5_MAGIC + b"\0" * 100)
    with pytest.raises(NotAModel, match="damaged"):
        intake.identify(tmp_path / "bad.h5")


# -- hostile archives ----------------------------------------------------------------------------
def zip_with(path: Path, entries: list[tuple[str, bytes]], symlink: str | None = None):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            z.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, "/etc/passwd")
    return path


@pytest.mark.parametrize("name", ["../evil.txt", "a/../../evil.txt", "/etc/evil", "C:/evil"])
def test_zip_slip_and_absolute_paths_refused(tmp_path, name):
    arch = zip_with(tmp_path / "m.zip", [("saved_model.pb", b"x"), (name, b"pwned")])
    dest = tmp_path / "work" / "source"
    with pytest.raises(UnsafeArchive):
        intake.extract(arch, dest)
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "work" / "evil.txt").exists()
    assert not dest.exists()  # nothing half-extracted is left behind


def test_zip_symlink_refused(tmp_path):
    arch = zip_with(tmp_path / "m.zip", [("saved_model.pb", b"x")], symlink="variables")
    with pytest.raises(UnsafeArchive, match="symbolic link"):
        intake.extract(arch, tmp_path / "out")


def test_tar_links_and_devices_refused(tmp_path):
    for kind in (tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE):
        arch = tmp_path / f"m{kind!r}.tar.gz"
        with tarfile.open(arch, "w:gz") as tf:
            info = tarfile.TarInfo("model/variables")
            info.type, info.linkname = kind, "/etc/passwd"
            tf.addfile(info)
        with pytest.raises(UnsafeArchive):
            intake.extract(arch, tmp_path / f"out{kind!r}")


def test_tar_path_traversal_refused(tmp_path):
    arch = tmp_path / "m.tar"
    with tarfile.open(arch, "w") as tf:
        data = b"pwned"
        info = tarfile.TarInfo("../../evil.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    with pytest.raises(UnsafeArchive, match="outside"):
        intake.extract(arch, tmp_path / "a" / "b")
    assert not (tmp_path / "evil.txt").exists()


def test_zip_bomb_refused_while_streaming(tmp_path):
    arch = zip_with(tmp_path / "bomb.zip", [("saved_model.pb", b"\0" * (64 << 20))])
    assert arch.stat().st_size < 200_000
    with pytest.raises(UnsafeArchive, match="zip bomb"):
        intake.extract(arch, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_size_and_file_count_limits(tmp_path):
    many = zip_with(tmp_path / "many.zip", [(f"f{i}", b"x") for i in range(20)])
    with pytest.raises(UnsafeArchive, match="max_files"):
        intake.extract(many, tmp_path / "o1", intake.Limits(max_files=10))
    big = zip_with(tmp_path / "big.zip", [("w.bin", bytes(range(256)) * 4096)])
    with pytest.raises(UnsafeArchive, match="max_total_bytes"):
        intake.extract(big, tmp_path / "o2", intake.Limits(max_total_bytes=100_000))


def test_limits_from_config_section():
    lim = intake.Limits.from_config({"max_files": 5, "max_ratio": 50, "unrelated": 1})
    assert lim.max_files == 5 and lim.max_ratio == 50


def test_safe_archive_extracts(tmp_path):
    write_saved_model(tmp_path / "m")
    arch = tmp_path / "m.zip"
    with zipfile.ZipFile(arch, "w") as z:
        for p in (tmp_path / "m").rglob("*"):
            if p.is_file():
                z.write(p, Path("m") / p.relative_to(tmp_path / "m"))
    src = intake.intake(arch, tmp_path / "work", runner_tf="2.15.1")
    assert src.kind == "saved_model"
    assert (src.path / "variables" / "variables.index").read_bytes() == b"index"
