from __future__ import annotations

from series.entry import main

raise SystemExit(main())
