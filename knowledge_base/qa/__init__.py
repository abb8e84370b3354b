"""Question answering over the KB: the ranker and its features (``questions``), concept words,
the semantic index and the sentence model it runs (``semantic``, ``minilm``), the phrasebooks,
and the answers the faces render (``answers``). It reads the KB; the KB's core (builder, store,
name lookup, pipeline, extract) never imports it."""
