from __future__ import annotations

from series.cli import main

raise SystemExit(main())
