from __future__ import annotations

from series.entry import end, main

end(main())
