"""The runtime code both targets write into a script whose workers read files only the chief
wrote: the chief packs what is at the path, every other worker writes the same files at the
same path, each one atomically and only where its own copy differs (a worker that shares the
chief's folder finds the same bytes and writes nothing, so no one reads a half-written file).
How the bytes travel is the target's ({send}: Horovod's broadcast, or an all-reduce)."""
from __future__ import annotations

SYNC = '''
def _tfdesk_where(base):
    # The machine and the folder itself (device, inode): the same on workers sharing it.
    import os, socket
    if base in ("", ".") or not os.path.exists(base):
        return ""
    st = os.stat(base)
    return f"{{socket.gethostname()}}:{{st.st_dev}}:{{st.st_ino}}"


def {name}(path):
    # {who} alone wrote the files at this path (checkpoints, logs, saves, data files): every
    # worker waits here until {who} is done, and the others get {who}'s files at the same
    # path. Returns the path.
    import io, os, tarfile, tempfile
    if isinstance(path, (list, tuple)):
        return type(path)({name}(p) for p in path)
    payload = b""
    if {chief}:
        base = str(path)
        while base not in ("", ".") and not os.path.exists(base):  # a pattern: its folder
            base = os.path.dirname(base)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            if base not in ("", "."):
                tar.add(base, arcname="_tfdesk_root")
            for key, text in (("_tfdesk_base", base), ("_tfdesk_where", _tfdesk_where(base))):
                info = tarfile.TarInfo(key)
                info.size = len(text.encode())
                tar.addfile(info, io.BytesIO(text.encode()))
        payload = buffer.getvalue()
    payload = {send}
    if {chief}:
        return path
    with tarfile.open(fileobj=io.BytesIO(payload)) as tar:
        base = tar.extractfile("_tfdesk_base").read().decode()
        if tar.extractfile("_tfdesk_where").read().decode() == _tfdesk_where(base):
            return path  # this worker shares {who}'s folder: the files are there already
        # In the chief's order of modification (code picking the newest file agrees).
        for member in sorted(tar.getmembers(), key=lambda m: m.mtime):
            if not member.name.startswith("_tfdesk_root"):
                continue
            rel = os.path.relpath(member.name, "_tfdesk_root")
            target = base if rel == "." else os.path.join(base, rel)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            data = tar.extractfile(member).read()
            if os.path.isfile(target):
                with open(target, "rb") as f:
                    if f.read() == data:
                        continue
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            fd, scratch = tempfile.mkstemp(dir=os.path.dirname(target) or ".", prefix=".tfdesk-")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.utime(scratch, (member.mtime, member.mtime))
            os.replace(scratch, target)
    return path
'''

HOROVOD = SYNC.replace("{name}", "_hvd_sync_from_rank0").replace("{who}", "rank 0").replace(
    "{chief}", "{hvd}.rank() == 0").replace(
    "{send}", '__import__("horovod.tensorflow", fromlist=["x"]).broadcast_object(payload, root_rank=0)')

TF_DISTRIBUTE = SYNC.replace("{name}", "_tfd_sync_from_chief").replace("{who}", "the chief").replace(
    "{chief}", "_is_chief()").replace("{send}", "_tfd_send_from_chief(payload)")

# tf.distribute has no broadcast of bytes: every worker adds its bytes (zeros but the chief's)
# by all-reduce, the length first.
TF_DISTRIBUTE_SEND = '''
def _tfd_send_from_chief(payload):
    # tf.distribute: the chief's bytes to every worker, by all-reduce (the others add zeros).
    import numpy as np

    def total(value):
        per_replica = {strategy}.run(lambda v: v, args=(value,))
        return {strategy}.reduce({tf}.distribute.ReduceOp.SUM, per_replica, axis=None)

    size = int(total({tf}.constant(len(payload), {tf}.int64)))
    data = np.zeros(size, np.int32)
    data[:len(payload)] = np.frombuffer(payload, np.uint8)
    return total({tf}.constant(data)).numpy().astype(np.uint8).tobytes()
'''
