"""One module per command; each exposes ``run(series, ui, **options) -> int``."""
