"""The converter's rule tables against the KB: every TensorFlow/Keras API name a rule matches
exists in the releases the table claims (by default 2.2-2.15, the releases both targets serve:
Horovod needs Keras 2). A TF1 spelling (tf.Session, tf.train.AdamOptimizer) counts when the
KB has it under tf.compat.v1, where TF 2 keeps the TF1 API; a method of a TF1 class counts when
the class is there and the TF 2 class has the method."""
import pytest

from converters.script import tables as T

DEFAULT_CLAIM = ("2.2", "2.15")
# table -> (first, last) release the table claims its names for, where not the default.
CLAIMS: dict[str, tuple[str, str]] = {"KERAS3_ONLY_NAMES": ("2.16", "2.21"),
                                      "LAYER_BASES": ("2.2", "2.21")}
NOT_API = {"CANONICAL_PREFIXES", "LR_KEYWORDS", "STRING_OPTIMIZERS", "NON_TF_RECEIVERS",
           "NON_KERAS_LIBRARIES", "KERAS3_ONLY_PREFIXES", "KERAS3_OPTIMIZER_METHODS",
           "HOROVOD_MODULES", "VARIABLE_CREATOR_PREFIXES", "SAVE_METHODS", "LOAD_METHODS",
           "RANK0_WRITE_METHODS"}


def _public(canonical: str) -> str:
    if canonical.startswith("keras."):
        return "tf." + canonical
    if canonical.startswith("tf1."):
        return "tf.compat.v1." + canonical[4:]
    return canonical


def _table_names() -> list[tuple[str, str]]:
    out = []
    for table, value in vars(T).items():
        if not table.isupper() or table in NOT_API or not isinstance(value, (dict, set, frozenset)):
            continue
        for name in value:
            if isinstance(name, str) and name.split(".")[0] in ("tf", "tf1", "keras"):
                out.append((table, name))
    return sorted(out)


def _releases(kb, name: str) -> set[str]:
    sym = kb.symbol(name)
    if sym is None:
        return set()
    return {kb.versions[o] for s in kb.spans(sym["id"]) for o in range(s["first_ord"], s["last_ord"] + 1)}


def _claimed(kb, table: str) -> set[str]:
    first, last = CLAIMS.get(table, DEFAULT_CLAIM)
    return set(kb.versions[kb.ord_of(first):kb.ord_of(last) + 1])


def test_the_tables_hold_api_names():
    assert len(_table_names()) > 80


@pytest.mark.parametrize("table, name", _table_names(), ids=lambda v: v)
def test_rule_table_name_exists_in_the_releases_it_claims(shipped_kb, table, name):
    kb = shipped_kb.kb
    public = _public(name)
    found = _releases(kb, public)
    if not found and public.startswith("tf.") and not public.startswith("tf.compat.v1."):
        found = _releases(kb, "tf.compat.v1." + public[3:])  # a TF1 spelling
    if not found and public.startswith("tf.compat.v1."):
        owner, method = public.rsplit(".", 1)  # a TF1 class's method: class + TF 2 method
        found = _releases(kb, owner) & _releases(kb, "tf." + owner[len("tf.compat.v1."):] + "." + method)
    claimed = _claimed(kb, table)
    assert found & claimed, (f"{table}: {name} ({public}) is in no release from "
                             f"{min(claimed)} to {max(claimed)}; the KB has it in {sorted(found) or 'none'}")


@pytest.mark.parametrize("name", sorted(T.KERAS3_ONLY_NAMES))
def test_a_keras3_only_name_is_in_no_keras2_release(shipped_kb, name):
    kb = shipped_kb.kb
    found = _releases(kb, _public(name))
    keras2 = set(kb.versions[:kb.ord_of("2.15") + 1])
    assert found and not found & keras2, f"{name}: in {sorted(found)}"
