"""The fix for a keyword error ("got an unexpected keyword argument", Keras' "Argument(s) not
recognized"): the parameter's history in the callable the error names (when it went, what
replaces it), or, for a keyword it never took, its parameters spelt most like it."""
from __future__ import annotations

from knowledge_base.names import canonical_rank
from knowledge_base.qa import params
from knowledge_base.qa.fix_parts import Fix, keras_note as _keras_note
from knowledge_base.qa.fix_parts import popularity as _popularity
from knowledge_base.qa.pasted import Pasted
from knowledge_base.store import KB, like_escape


def keyword_fix(kb: KB, keyword: str, callable_: str | None, pasted: Pasted,
                keras: int | None) -> Fix | None:
    wanted = _callables(kb, callable_, keyword, pasted)
    if not wanted and _callables(kb, callable_, keyword, pasted, took=False):
        # What was called is known and never took it: not another symbol's history.
        return _unknown_keyword(kb, keyword, callable_, pasted)
    cands = wanted or params.symbols_with(kb, keyword)
    used = _popularity(kb)
    best: tuple | None = None
    for name in cands:
        h = params.history(kb, name, keyword)
        if h is None or not h.relevant or h.accepts_now and not h.deprecated:
            continue
        score = (-wanted.index(name) if name in wanted else -len(cands) - 1,
                 not kb.unusable(kb.symbol(name)), bool(h.replacement),
                 bool(h.gone_in), keras == 3 and bool(h.gone_in) and _is_keras(name),
                 name.startswith("tf.keras"), ".compat." not in name, used.get(name, 0))
        if best is None or score > best[0] or score == best[0] and \
                canonical_rank(name) < canonical_rank(best[1].symbol):
            best = (score, h)
    if best is None:
        return _unknown_keyword(kb, keyword, callable_, pasted)
    h = best[1]
    sym = kb.symbol(h.symbol)
    unusable = kb.unusable(sym)
    if unusable:  # a stub takes any keyword and raises: that is the news
        return Fix("", f"`{h.symbol}` is present but unusable in TensorFlow {kb.newest}: it "
                       f"raises {unusable}", [h.symbol], keyword)
    when = h.gone_in or h.deprecated_in
    keras_note = _keras_note(kb, sym, h.gone_in) if h.gone_in else ""
    if h.replacement:
        text = f"Use `{h.replacement}=` instead of `{keyword}=`"
    else:
        text = f"Remove `{keyword}=`"
    if h.gone_in:
        text += f": `{h.symbol}` takes no `{keyword}` since TensorFlow {h.gone_in}{keras_note}"
        if h.accepts_now and h.deprecated_in:
            text += f"; from {h.deprecated_in} it is accepted again, deprecated"
    elif when:
        text += f": `{h.symbol}` deprecated `{keyword}` in TensorFlow {when}"
    if h.took:
        text += f" (it took `{keyword}` in {h.took})"
    if h.deprecated:
        text += f". {h.deprecated}"
    return Fix("", text, [h.symbol], keyword)


def _is_keras(name: str) -> bool:
    return name.startswith(("tf.keras.", "tf.optimizers.", "tf.losses.", "tf.metrics."))


def _unknown_keyword(kb: KB, keyword: str, callable_: str | None, pasted: Pasted) -> Fix | None:
    """A keyword no release of the called symbol took (Keras 1's ``nb_epoch``, a typo): the
    parameter of that symbol spelt most like it, else what it takes."""
    from rapidfuzz import fuzz, process
    called = _callables(kb, callable_, keyword, pasted, took=False)
    if not called:
        return None
    name = called[0]
    taken = [p for p in params._names(kb.symbol(name)["signature"]) or []
             if p not in ("self", "args", "kwargs")]
    near = process.extractOne(keyword, taken, scorer=fuzz.ratio, score_cutoff=60)
    never = f"`{name}` takes no `{keyword}` in any TensorFlow {kb.versions[0]}–{kb.newest}"
    if near:
        return Fix("", f"Use `{near[0]}=` instead of `{keyword}=`: {never}", [name], keyword)
    shown = ", ".join(taken[:8]) + (", …" if len(taken) > 8 else "")
    return Fix("", f"Remove `{keyword}=`: {never}" + (f" (it takes {shown})" if taken else ""),
               [name], keyword)


def _callables(kb: KB, callable_: str | None, keyword: str, pasted: Pasted,
               took: bool = True) -> list[str]:
    """KB names of what was called with ``keyword``: the message's callable, else the calls
    in the user's code line that passed it; ``took``: only those that ever took it."""
    shorts: list[str] = []
    calls = pasted.calls()
    if callable_:
        parts = [p for p in callable_.split(".") if p not in ("__init__", "__call__")]
        said = ".".join(parts)
        # "deserialize()" is several functions; the code line's tf.keras.activations.deserialize
        # is the one called.
        shorts += [c for c in calls if said and c.endswith("." + said)]
        shorts.append(said)
    shorts += calls
    out: list[str] = []
    for s in shorts:
        full = None
        head, _, rest = s.partition(".")
        if head in ("tf", "tensorflow", "keras"):
            full = "tf." + rest if head != "keras" else "tf.keras." + rest
            if kb.symbol(full):
                out.append(full)
                continue
        owner, _, leaf = s.rpartition(".")
        rows = kb.db.execute("SELECT name, parent FROM symbols WHERE short = ? AND name NOT LIKE "
                             "'tf.compat.%' AND kind IN ('class', 'function', 'method')", (leaf,))
        rows = [tuple(r) for r in rows]
        # "MeanIoU.add_weight": the method of that class first (Python's qualname says it).
        cls = owner.rpartition(".")[2]
        out += [n for n, parent in rows if cls and (parent or "").endswith("." + cls)]
        if cls:
            # Python names the class that defines the method, often a private base
            # ("TFOptimizer.add_variable_from_reference", "ConvLSTM.compute_mask"): the
            # public names of that definition (the KB keeps where each is defined).
            defined = kb.db.execute(
                "SELECT DISTINCT s.name FROM symbols s JOIN spans p ON p.symbol_id = s.id "
                "WHERE s.short = ? COLLATE NOCASE AND s.short = ? AND p.object LIKE ? ESCAPE "
                "'\\' AND s.name NOT LIKE 'tf.compat.%'",  # NOCASE: the index on short
                (leaf, leaf, "%." + like_escape(f"{cls}.{leaf}")))
            out += sorted((n for (n,) in defined), key=canonical_rank)
        out += [n for n, _ in rows]
    if not took:
        return list(dict.fromkeys(out))
    having = set(params.keyword_ids(kb, keyword))
    return [n for n in dict.fromkeys(out) if kb.symbol(n)["id"] in having]
