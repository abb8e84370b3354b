"""Build-time tools of the question wing (fitting the ranker, writing the phrasebooks and
usage counts, splitting real users' questions). Run from the repository root as
``.venv/bin/python -m tools.NAME``; what each writes is in knowledge_base/data/MANIFEST.yaml."""
